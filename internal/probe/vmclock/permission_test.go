package vmclock

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A refused open says what fixes it, naming the path, whichever of the two
// refusals it is; anything else passes through as it was.
func TestExplainOpen(t *testing.T) {
	t.Parallel()
	const recipe = `: it must be readable by group clockwatch: the udev rule /usr/lib/udev/rules.d/60-clockwatch-vmclock.rules ` +
		`(SUBSYSTEM=="misc", KERNEL=="vmclock[0-9]*", GROUP="clockwatch", MODE="0640"; the packages install it), ` +
		`applied with "udevadm trigger --action=change --subsystem-match=misc"; clockwatch must run in group clockwatch; ` +
		`and under systemd its unit needs DeviceAllow=char-misc r and, with PrivateDevices=yes, BindReadOnlyPaths=-/dev/vmclock1 ` +
		`(the packaged clockwatch.service has both)`
	pathErr := func(errno syscall.Errno) error {
		return &fs.PathError{Op: "open", Path: "/dev/vmclock1", Err: errno}
	}
	for _, tc := range []struct {
		name       string
		err        error
		want       string
		permission bool
		notExist   bool
	}{
		{"the node's mode (EACCES)", pathErr(syscall.EACCES),
			"permission denied on the VMClock device /dev/vmclock1 (open /dev/vmclock1: permission denied)" + recipe, true, false},
		{"a device ACL (EPERM)", pathErr(syscall.EPERM),
			"the VMClock device /dev/vmclock1 is not allowed to clockwatch (a device ACL) (open /dev/vmclock1: operation not permitted)" + recipe, true, false},
		{"absent", pathErr(syscall.ENOENT), "open /dev/vmclock1: no such file or directory", false, true},
		{"anything else", pathErr(syscall.EIO), "open /dev/vmclock1: input/output error", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := explainOpen("/dev/vmclock1", tc.err)
			if diff := cmp.Diff(tc.want, got.Error()); diff != "" {
				t.Errorf("explainOpen() mismatch (-want +got):\n%s", diff)
			}
			if errors.Is(got, os.ErrPermission) != tc.permission || errors.Is(got, os.ErrNotExist) != tc.notExist {
				t.Errorf("explainOpen(%v) = %v: is ErrPermission %v, ErrNotExist %v; want %v, %v", tc.err, got,
					errors.Is(got, os.ErrPermission), errors.Is(got, os.ErrNotExist), tc.permission, tc.notExist)
			}
		})
	}
}
