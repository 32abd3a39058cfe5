// Package vm boots a real Linux kernel under qemu for clockwatch's end-to-end
// tests, so that they can step a clock: the clock of the machine the tests run
// on must never change, the clock of a throwaway VM may.
//
// Run builds an initramfs (written here, in cpio newc format) holding a static
// busybox, the files the test asks for (static binaries built with Builder,
// data) and an /init script that mounts /dev, /proc, /sys and tmpfs on /tmp
// and /run, brings up loopback, runs the test's shell script and powers off. It boots
// qemu-system-x86_64 with TCG (no KVM needed) and the serial console on its
// standard output, captures that console, enforces a timeout by killing only
// the qemu process it started, and hands back the console with the script's
// exit status and the result lines guest programs printed (package guest).
//
// The kernel is Debian's cloud kernel, fetched by scripts/deps.d/40-vm.sh into
// /var/cache/clockwatch-test/vmlinuz (or $CLOCKWATCH_TEST_KERNEL). Without it,
// or without qemu, tests skip, and fail under CI=true (internal/testtool).
//
// To watch a guest's console while a test runs, set
// CLOCKWATCH_TEST_VM_CONSOLE=1 (go test -v ./test/vm/ -run NAME).
//
// Tests that boot a VM do not call t.Parallel: under TCG a boot keeps a host
// core busy, so on a two-core CI machine parallel boots only slow each other
// down and blur the latencies they measure. One boot runs many steps instead.
//
// The guest programs of the harness live below: clockstep steps the clock by
// an exact amount, stepwatch watches for steps with a cancel-on-set timerfd,
// sockwatch subscribes to clockwatch's stepdown socket and timestamps what
// arrives, ntpserve is an NTP server whose time a test moves, for a real
// chronyd in the guest (Options.Dynamic brings its shared libraries). All
// refuse to run outside the VM (guest.CheckTestVM).
// StepsScript, MadeSteps and Summarize turn a list of steps into a guest
// script and its console back into what was done and how fast it was seen.
//
// The tests here are the harness's own (TestRunReportsTheScript,
// TestRunKillsAtTimeout, TestTimerfdSeesEachStep) and issue 3's real-kernel
// test of the daemon (TestClockwatchDetectsStepsInVM), and the incident
// itself: chronyd stepping the clock under clockwatch
// (TestChronydStepSeenByClockwatch), suspend to RAM under clockwatch
// (TestSuspendIsOneResumeInVM: qemu's S3 with Options.QemuArgs "-global
// PIIX4_PM.disable_s3=0", woken by the RTC alarm), and the time daemons that
// discipline a clock reaching their synchronised states under clockwatch:
// ntpsec's ntpd and a ptp4l slave over a veth pair between two network
// namespaces (TestTimeDaemonsSyncInVM; veth.ko comes from
// scripts/deps.d/41-ptp.sh), and real power cuts: qemu killed at random
// moments with clockwatch's state directory on an ext4 virtio disk
// (Options.Disk, Options.Kill; TestPowerCutsInVM, the modules from
// scripts/deps.d/42-disk.sh).
//
// Boot starts a VM that the test drives while it runs (a Machine, over
// qemu's QMP socket): Migrate sends the guest to another qemu started with
// Incoming (a live migration over loopback), SaveTo saves it to a file that
// Incoming("file:…") restores; each Machine keeps its console with the
// host's time of every line. VMClockOptions boots qemu 10 with -device
// vmclock and Linux 7.3.4 with ptp_vmclock.ko (scripts/deps.d/42-vmclock.sh
// unpacks both from the backports): TestVMClockMigrationInVM moves a guest
// running clockwatch four ways (issue 22).
//
// TestFleetPeersInVM boots three guests at once (Boot, Options.Modules with
// NetModules: a virtio NIC on qemu's user-mode network, each guest's 9847
// forwarded from a host port, the others reached at 10.0.2.2) for the
// fleet's clock (issue 34): peerprobe sets each guest's clock from the
// test's NTP server and asks a responder from outside its allow-list,
// sockwatch -watch-peer follows another guest's clock, and the host drives
// the guests through a tiny HTTP gate.
package vm
