package hostclock

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/clockwatch/clockwatch/internal/host"
)

// farFuture is when the clock-set timer would expire: 2242, far beyond any
// sane clock yet below the kernel's KTIME_SEC_MAX (2262).
const farFuture = 1 << 33

// NewClockSetWatcher returns a watcher on a timerfd of CLOCK_REALTIME armed
// with TFD_TIMER_ABSTIME|TFD_TIMER_CANCEL_ON_SET: the kernel cancels it, and
// read fails with ECANCELED, whenever the wall clock is set discontinuously
// (clock_settime, settimeofday, adjtimex ADJ_SETOFFSET, a leap second) and on
// resume from suspend.
func NewClockSetWatcher() *ClockSetWatcher {
	return &ClockSetWatcher{
		open:  openTimerFD,
		now:   host.Monotonic,
		marks: make(chan Mark, 64),
		ready: make(chan struct{}), done: make(chan struct{}),
	}
}

// timerFD is the real clockSetTimer. The descriptor is non-blocking and
// wrapped in an os.File, so a read parks the goroutine in Go's netpoller
// instead of holding a thread.
type timerFD struct{ f *os.File }

var _ clockSetTimer = (*timerFD)(nil)

func openTimerFD() (clockSetTimer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_REALTIME, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("timerfd_create(CLOCK_REALTIME): %w", err)
	}
	return &timerFD{f: os.NewFile(uintptr(fd), "timerfd-clockset")}, nil
}

func (t *timerFD) arm() error {
	// Normally 2242. Should the wall clock ever be set past it, arm far
	// beyond the new time instead: re-arming at a time already past would
	// expire at once, again and again.
	at := int64(farFuture)
	var now unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_REALTIME, &now); err == nil {
		at = max(at, now.Sec+1<<31)
	}
	spec := unix.ItimerSpec{Value: unix.Timespec{Sec: at}}
	rc, err := t.f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.TimerfdSettime(int(fd), unix.TFD_TIMER_ABSTIME|unix.TFD_TIMER_CANCEL_ON_SET, &spec, nil)
	}); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("timerfd_settime: %w", serr)
	}
	return nil
}

func (t *timerFD) wait() error {
	var buf [8]byte
	_, err := t.f.Read(buf[:])
	if errors.Is(err, unix.ECANCELED) {
		return errClockSet
	}
	return err
}

func (t *timerFD) close() error {
	if err := t.f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return err
	}
	return nil
}
