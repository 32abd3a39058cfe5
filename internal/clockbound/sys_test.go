package clockbound

import (
	"syscall"
)

type syscallStat = syscall.Stat_t

func stat(path string, st *syscall.Stat_t) error { return syscall.Stat(path, st) }

func syscallUmask(m int) int { return syscall.Umask(m) }
