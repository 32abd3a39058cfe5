// Package systemdvm is the test of clockwatch's package under a real systemd:
// a Debian 12 root (debootstrap, minbase plus systemd and udev) booted under
// qemu with systemd as PID 1, where the .deb is installed with dpkg the way a
// user installs it. The VM is qemu 10 with -device vmclock and Linux 7.3.4
// with ptp_vmclock (scripts/deps.d/42-vmclock.sh; Debian 12's kernel has no
// VMClock driver), so that it also proves the packaged unit lets the daemon
// read /dev/vmclock0 (the udev rule, the private /dev, the device ACL) and
// starts without it, PID 1 logging no warning either way. It proves what no test on a machine without systemd can: that
// the postinst enables and starts the service, that the daemon comes up
// (READY=1, STATUS) inside the unit's sandbox with its clock reads allowed, that
// the watchdog keeps it alive, and that reload, socket activation, stop and
// purge work. Then it replaces chrony with systemd-timesyncd (they conflict),
// synchronises timesyncd to a test NTP server in the guest (ntpserver, this
// clock + 100 ms), checks that the running daemon finds timesyncd on the
// system bus from inside its sandbox, reads it as synchronised with the
// offset's sign right, and sees it lose synchronisation once the server
// stops. Only here does a real timesyncd run: it sets the clock.
//
// It downloads packages from the Debian archive once (the root is cached under
// /var/cache/clockwatch-test, named after mkroot.sh's hash) and boots a VM
// without KVM for about 6 minutes, so a plain go test skips it: make test runs
// it on its own after the other tests (make test-systemd-vm), with
// CLOCKWATCH_SYSTEMD_VM_TEST=1, as root.
//
// CLOCKWATCH_SYSTEMD_VM_FAULT=stall injects a fault of the daemon (frozen
// across the guest's step for 2 s): that run must fail, which shows that the
// checks judge the daemon and not only the harness.
package systemdvm
