package vmclock

import (
	"errors"
	"fmt"
	"syscall"
)

// RulesFile is the udev rule the packages install that gives the VMClock
// device to clockwatch's group (packaging/60-clockwatch-vmclock.rules).
const RulesFile = "/usr/lib/udev/rules.d/60-clockwatch-vmclock.rules"

// explainOpen turns a refused open of the device at path into a sentence
// that says what fixes it; other errors pass through unchanged (a missing
// device must stay os.ErrNotExist: the poller calls that absence). EACCES
// is the node's owner and mode (ptp_vmclock makes it root-only); EPERM is a
// device ACL (systemd's DeviceAllow=, through the cgroup device
// controller). Both get the whole recipe: one line in the log must be
// enough to fix either.
func explainOpen(path string, err error) error {
	var why string
	switch {
	case errors.Is(err, syscall.EACCES):
		why = fmt.Sprintf("permission denied on the VMClock device %s", path)
	case errors.Is(err, syscall.EPERM):
		why = fmt.Sprintf("the VMClock device %s is not allowed to clockwatch (a device ACL)", path)
	default:
		return err
	}
	return fmt.Errorf(`%s (%w): it must be readable by group clockwatch: the udev rule %s `+
		`(SUBSYSTEM=="misc", KERNEL=="vmclock[0-9]*", GROUP="clockwatch", MODE="0640"; the packages install it), `+
		`applied with "udevadm trigger --action=change --subsystem-match=misc"; clockwatch must run in group clockwatch; `+
		`and under systemd its unit needs DeviceAllow=char-misc r and, with PrivateDevices=yes, BindReadOnlyPaths=-%s `+
		`(the packaged clockwatch.service has both)`,
		why, err, RulesFile, path)
}
