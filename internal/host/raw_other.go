//go:build !linux || !(amd64 || arm64)

package host

import "syscall"

// Fstat is fstat(2) of an open file descriptor (through the syscall
// package here; raw on linux/amd64 and linux/arm64, raw_fast_linux.go).
func Fstat(fd int, st *syscall.Stat_t) error { return syscall.Fstat(fd, st) }

// Lstat is lstat(2): the link itself when path is one.
func Lstat(path string, st *syscall.Stat_t) error { return syscall.Lstat(path, st) }
