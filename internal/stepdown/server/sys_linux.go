package server

import (
	"fmt"
	"net"
	"time"

	"golang.org/x/sys/unix"

	"github.com/clockwatch/clockwatch/internal/host"
)

// peerCred reads SO_PEERCRED: the pid, uid and gid of the process that
// connected.
func peerCred(c *net.UnixConn) (Cred, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return Cred{}, fmt.Errorf("reading SO_PEERCRED: %w", err)
	}
	var uc *unix.Ucred
	var serr error
	if err := rc.Control(func(fd uintptr) { uc, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil {
		return Cred{}, fmt.Errorf("reading SO_PEERCRED: %w", err)
	}
	if serr != nil {
		return Cred{}, fmt.Errorf("reading SO_PEERCRED: %w", serr)
	}
	return Cred{PID: uc.Pid, UID: uc.Uid, GID: uc.Gid}, nil
}

// monotonic reads CLOCK_MONOTONIC, the clock of the step detector's
// timestamps, so that both can be compared.
func monotonic() time.Duration {
	return time.Duration(host.Monotonic())
}

// sysBoot returns this boot's id and CLOCK_BOOTTIME minus CLOCK_MONOTONIC
// (the time spent suspended), to store monotonic times in BOOTTIME.
func sysBoot() (string, time.Duration, error) {
	id, err := host.BootID() // the policy's state carries over only within a boot
	if err != nil {
		return "", 0, err
	}
	bt, err := host.ClockNano(unix.CLOCK_BOOTTIME)
	if err != nil {
		return "", 0, fmt.Errorf("clock_gettime(CLOCK_BOOTTIME): %w", err)
	}
	return id, time.Duration(bt - host.Monotonic()), nil
}
