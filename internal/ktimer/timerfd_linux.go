package ktimer

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// timerfd is a CLOCK_MONOTONIC timerfd (the clock of Go's timers: it stops
// in a suspend as they do), read by a goroutine parked in the network
// poller until the kernel fires it.
type timerfd struct {
	f  *os.File
	fd int
}

func newKernelTimer(fire func()) (kernelTimer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("timerfd_create: %w", err)
	}
	t := &timerfd{f: os.NewFile(uintptr(fd), "timerfd"), fd: fd}
	go t.read(fire)
	return t, nil
}

// read calls fire at each expiry until the file is closed.
func (t *timerfd) read(fire func()) {
	var expirations [8]byte
	for {
		if _, err := t.f.Read(expirations[:]); err != nil {
			return
		}
		fire()
	}
}

func (t *timerfd) arm(d time.Duration) error {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	return unix.TimerfdSettime(t.fd, 0, &spec, nil)
}

func (t *timerfd) close() error { return t.f.Close() }
