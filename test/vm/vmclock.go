package vm

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/clockwatch/clockwatch/internal/testtool"
)

const (
	// DefaultVMClockDir is where scripts/deps.d/42-vmclock.sh unpacks qemu
	// 10 (which has -device vmclock), Linux 7.3.4 and its ptp_vmclock.ko.
	DefaultVMClockDir = "/var/cache/clockwatch-test/vmclock"
	// VMClockEnv names another directory holding the same three files.
	VMClockEnv = "CLOCKWATCH_TEST_VMCLOCK"
	// VMClockModulePath is where VMClockOptions puts ptp_vmclock.ko in the
	// guest (insmod it: the 7.3.4 kernel has the PTP core built in).
	VMClockModulePath = "/lib/ptp_vmclock.ko"
)

// VMClockOptions returns opts set to boot qemu 10 with a vmclock device and
// the 7.3.4 kernel, with ptp_vmclock.ko in the guest at VMClockModulePath.
// Without the files of 42-vmclock.sh the test fails under CI and is skipped
// elsewhere.
func VMClockOptions(t testing.TB, opts Options) Options {
	t.Helper()
	dir := os.Getenv(VMClockEnv)
	if dir == "" {
		dir = DefaultVMClockDir
	}
	for _, f := range []string{"qemu-system-x86_64", "vmlinuz", "ptp_vmclock.ko"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			testtool.Missing(t, fmt.Sprintf("%s not found; run scripts/test-deps.sh (42-vmclock.sh) to fetch qemu 10 and Linux 7.3.4", filepath.Join(dir, f)))
		}
	}
	opts.Qemu = filepath.Join(dir, "qemu-system-x86_64")
	opts.Kernel = filepath.Join(dir, "vmlinuz")
	// The extracted binary looks for its firmware where its own package
	// would have put it; the host's qemu-system-data has what a pc needs.
	opts.DataDir = "/usr/share/qemu"
	opts.QemuArgs = append(append([]string(nil), opts.QemuArgs...), "-device", "vmclock")
	files := map[string]string{VMClockModulePath: filepath.Join(dir, "ptp_vmclock.ko")}
	for k, v := range opts.Files {
		files[k] = v
	}
	opts.Files = files
	return opts
}
