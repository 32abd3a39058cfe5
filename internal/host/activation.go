package host

import (
	"strconv"
	"strings"
)

// ListenFDsStart is the first file descriptor systemd passes
// (SD_LISTEN_FDS_START).
const ListenFDsStart = 3

// Socket is one socket systemd passed: its descriptor and its
// FileDescriptorName= ("" when the unit gave none).
type Socket struct {
	FD   int
	Name string
}

// Activated parses socket activation (LISTEN_PID, LISTEN_FDS,
// LISTEN_FDNAMES, read with getenv): the sockets systemd passed to the
// process pid, none when they are not for it. It opens nothing and leaves
// the environment alone.
func Activated(getenv func(string) string, pid int) []Socket {
	if getenv("LISTEN_PID") != strconv.Itoa(pid) {
		return nil
	}
	n, err := strconv.Atoi(getenv("LISTEN_FDS"))
	if err != nil || n < 1 {
		return nil
	}
	names := strings.Split(getenv("LISTEN_FDNAMES"), ":")
	out := make([]Socket, n)
	for i := range n {
		out[i].FD = ListenFDsStart + i
		if i < len(names) {
			out[i].Name = names[i]
		}
	}
	return out
}

// Env is a process's environment and id, given to the code that needs them
// (the daemon through its Options) rather than read by it: a test gives its
// own (hosttest-style: package daemontest's directories), never the host's.
type Env struct {
	// Getenv reads a variable; nil is an empty environment.
	Getenv func(string) string
	// PID is the process's id, for socket activation.
	PID int
}
