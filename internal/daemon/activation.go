package daemon

import (
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/clockwatch/clockwatch/internal/host"
	"github.com/clockwatch/clockwatch/internal/transport/socket"
)

// webActivationFDs lists the sockets systemd passed for HTTP: all of them
// but the stepdown socket (FileDescriptorName=stepdown), which belongs to the
// stepdown server. exporter-toolkit's own --web.systemd-socket handling
// would serve HTTP on every passed socket, the stepdown one included.
func webActivationFDs(getenv func(string) string, pid int) []int {
	var fds []int
	for _, s := range host.Activated(getenv, pid) {
		if s.Name != socket.ActivationName {
			fds = append(fds, s.FD)
		}
	}
	return fds
}

// activatedWebListeners turns the sockets systemd passed for HTTP into
// listeners.
func (d *Daemon) activatedWebListeners() ([]net.Listener, error) {
	getenv := d.opts.Env.Getenv
	fds := webActivationFDs(getenv, d.opts.Env.PID)
	if len(fds) == 0 {
		return nil, fmt.Errorf("--web.systemd-socket: systemd passed no socket for HTTP (LISTEN_FDS=%q, LISTEN_FDNAMES=%q)",
			getenv("LISTEN_FDS"), getenv("LISTEN_FDNAMES"))
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
