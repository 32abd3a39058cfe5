//go:build linux

package host

import "syscall"

// sysFstatat is fstatat(2)'s number.
const sysFstatat = syscall.SYS_FSTATAT
