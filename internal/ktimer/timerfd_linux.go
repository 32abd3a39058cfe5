package ktimer

import (
	"fmt"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/clockwatch/clockwatch/internal/host"
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

// read calls fire at each expiry until the file is closed. The read is
// raw (the timerfd is ready when the poller says so: it never blocks), as
// is the arming (host.TimerfdArm): through the syscall package each would
// wake the runtime's monitor thread, and the idle daemon's wake-up would
// cost three or four thread wake-ups where one does.
func (t *timerfd) read(fire func()) {
	rc, err := t.f.SyscallConn()
	if err != nil {
		return
	}
	var expirations uint64
	for {
		err := rc.Read(func(fd uintptr) bool {
			_, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&expirations)), 8)
			return e != unix.EAGAIN
		})
		if err != nil {
			return
		}
		fire()
	}
}

func (t *timerfd) arm(d time.Duration) error { return host.TimerfdArm(t.fd, int64(d)) }

func (t *timerfd) close() error { return t.f.Close() }
