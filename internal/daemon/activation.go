package daemon

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/clockwatch/clockwatch/internal/stepdown/server"
)

// listenFDsStart is the first file descriptor systemd passes (SD_LISTEN_FDS_START).
const listenFDsStart = 3

// webActivationFDs lists the sockets systemd passed for HTTP: all of them
// but the stepdown socket (FileDescriptorName=stepdown), which belongs to the
// stepdown server. exporter-toolkit's own --web.systemd-socket handling
// would serve HTTP on every passed socket, the stepdown one included.
func webActivationFDs(getenv func(string) string, pid int) []int {
	if getenv("LISTEN_PID") != strconv.Itoa(pid) {
		return nil
	}
	n, err := strconv.Atoi(getenv("LISTEN_FDS"))
	if err != nil || n < 1 {
		return nil
	}
	names := strings.Split(getenv("LISTEN_FDNAMES"), ":")
	var fds []int
	for i := range n {
		if i < len(names) && names[i] == server.ActivationName {
			continue
		}
		fds = append(fds, listenFDsStart+i)
	}
	return fds
}

// activatedWebListeners turns the sockets systemd passed for HTTP into
// listeners.
func activatedWebListeners() ([]net.Listener, error) {
	fds := webActivationFDs(os.Getenv, os.Getpid())
	if len(fds) == 0 {
		return nil, fmt.Errorf("--web.systemd-socket: systemd passed no socket for HTTP (LISTEN_FDS=%q, LISTEN_FDNAMES=%q)",
			os.Getenv("LISTEN_FDS"), os.Getenv("LISTEN_FDNAMES"))
	}
	var ls []net.Listener
	for _, fd := range fds {
		f := os.NewFile(uintptr(fd), "systemd-http-"+strconv.Itoa(fd))
		l, err := net.FileListener(f)
		f.Close() // FileListener holds its own copy
		if err != nil {
			for _, o := range ls {
				o.Close()
			}
			return nil, fmt.Errorf("using socket fd %d passed by systemd for HTTP: %w", fd, err)
		}
		ls = append(ls, l)
	}
	return ls, nil
}
