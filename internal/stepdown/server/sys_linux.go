package server

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
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
