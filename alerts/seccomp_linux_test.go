package alerts

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// denyAdjtimexEnv, when set to the path of clockwatch, makes the test binary
// a launcher: it forbids adjtimex and clock_adjtime to itself (as systemd's
// ProtectClock=yes does) and execs clockwatch with its arguments, which
// inherits the filter.
const denyAdjtimexEnv = "CLOCKWATCH_TEST_DENY_ADJTIMEX"

func TestMain(m *testing.M) {
	if bin := os.Getenv(denyAdjtimexEnv); bin != "" {
		runtime.LockOSThread() // the filter is installed on this thread, which execs
		if err := denyAdjtimex(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		err := syscall.Exec(bin, append([]string{bin}, os.Args[1:]...), os.Environ())
		fmt.Fprintf(os.Stderr, "exec %s: %v\n", bin, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// auditArchX8664 is AUDIT_ARCH_X86_64, the only architecture the filter
// knows; callers skip elsewhere.
const auditArchX8664 = 0xc000003e

// denyAdjtimex installs a seccomp filter on the calling thread that fails
// adjtimex(2) and clock_adjtime(2) with EPERM and allows everything else.
func denyAdjtimex() error {
	if runtime.GOARCH != "amd64" {
		return fmt.Errorf("the adjtimex filter is for amd64, not %s", runtime.GOARCH)
	}
	filter := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 4}, // seccomp_data.arch
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 1, K: auditArchX8664},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // seccomp_data.nr
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 2, K: unix.SYS_ADJTIMEX},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 1, K: unix.SYS_CLOCK_ADJTIME},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("PR_SET_NO_NEW_PRIVS: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0); err != nil {
		return fmt.Errorf("installing the seccomp filter: %w", err)
	}
	return nil
}
