//go:build linux

package chrony

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/clockwatch/clockwatch/internal/safefile"
)

// exitWatch waits for chronyd's exit: a pidfd of the process whose PID
// chronyd's pid file holds, parked in Go's network poller (a pidfd becomes
// readable when its process exits). Waiting costs nothing: no thread wakes
// until the process is gone.
type exitWatch struct {
	pid    int
	f      *os.File
	closed atomic.Bool
	done   chan struct{}
}

// watchExit starts waiting for the exit of the chronyd whose PID pidFile
// holds, and calls exited once when it has exited (not after Close). It
// fails when the pid file cannot be read, names no running chronyd, or the
// kernel has no pidfd (before Linux 5.10).
func watchExit(pidFile string, exited func()) (*exitWatch, error) {
	// Through safefile, as RunningConf: a FIFO or a link to /dev/zero in
	// the pid file's place must not hang or flood.
	b, err := safefile.Read(safefile.Spec{What: "chronyd's pid file", Limit: 64, Links: safefile.LinksWithinDir}, pidFile)
	if err != nil {
		return nil, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return nil, fmt.Errorf("chronyd's pid file %s holds %q, not a PID", pidFile, b)
	}
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("watching chronyd (PID %d from %s): pidfd_open: %w", pid, pidFile, err)
	}
	// The pidfd holds the PID: a process of that PID now is the one
	// watched. A stale pid file may name another program; /proc may be
	// hidden (ProtectProc=invisible): then trust the file, which the
	// chronyd that answers has written at its start.
	if comm, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); err == nil && strings.TrimSpace(string(comm)) != "chronyd" {
		unix.Close(fd)
		return nil, fmt.Errorf("chronyd's pid file %s names PID %d, which is %q", pidFile, pid, strings.TrimSpace(string(comm)))
	}
	f := os.NewFile(uintptr(fd), "pidfd of chronyd")
	// A file the poller cannot wait on has no deadlines: then nothing
	// would wake the wait.
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		f.Close()
		return nil, fmt.Errorf("watching chronyd (PID %d): its pidfd cannot be waited on: %w", pid, err)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("watching chronyd (PID %d): %w", pid, err)
	}
	w := &exitWatch{pid: pid, f: f, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		err := rc.Read(func(fd uintptr) bool { return hasExited(int(fd)) })
		if !w.closed.Load() && (err == nil || !errors.Is(err, os.ErrClosed)) {
			exited()
		}
	}()
	return w, nil
}

// hasExited reports whether the pidfd is readable: its process has exited.
func hasExited(fd int) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0 && fds[0].Revents&(unix.POLLIN|unix.POLLHUP|unix.POLLERR) != 0
}

// Done is closed once the watched process has exited (or Close was called).
func (w *exitWatch) Done() <-chan struct{} { return w.done }

// Close stops the watch and waits for its goroutine.
func (w *exitWatch) Close() {
	if w.closed.Swap(true) {
		return
	}
	w.f.Close()
	<-w.done
}
