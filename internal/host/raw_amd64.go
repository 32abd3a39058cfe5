//go:build linux

package host

import "syscall"

// sysFstatat is fstatat(2)'s number (newfstatat on amd64).
const sysFstatat = syscall.SYS_NEWFSTATAT
