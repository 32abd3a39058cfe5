package vm

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/testtool"
	"github.com/clockwatch/clockwatch/test/vm/guest"
)

const (
	// DefaultKernel is where scripts/deps.d/40-vm.sh puts the kernel.
	DefaultKernel = "/var/cache/clockwatch-test/vmlinuz"
	// KernelEnv names a kernel to boot instead of DefaultKernel.
	KernelEnv = "CLOCKWATCH_TEST_KERNEL"
	// ConsoleEnv, set to 1, copies every guest console to the test's
	// standard error as it comes, to watch a boot while debugging.
	ConsoleEnv = "CLOCKWATCH_TEST_VM_CONSOLE"

	// ScriptPath is where the test's script lands in the guest.
	ScriptPath = "/etc/clockwatch-test/script.sh"
	// LibPath holds the shell functions every script can use (it sources
	// them first); other shells, such as clockstep's -wait command, source
	// it themselves.
	LibPath = "/etc/clockwatch-test/lib.sh"

	defaultTimeout = 3 * time.Minute
	defaultMemory  = 256
)

// Options says what to boot and what to run in the guest.
type Options struct {
	// Files maps a path in the guest to a host file copied there with its
	// permission bits. Executables must be static: the guest has no libc.
	Files map[string]string
	// Dynamic maps a path in the guest to a dynamically linked host
	// executable (chronyd, say): it is copied like Files, and its loader and
	// shared libraries go to the same paths in the guest as on the host.
	// The guest has an /etc/passwd and /etc/group with root only.
	Dynamic map[string]string
	// Script is run by busybox sh as soon as the guest is up: /dev, /proc,
	// /sys, a tmpfs on /tmp and /run, loopback up, every busybox applet on
	// PATH, and the shell functions of shellLib defined (cw_wait_file,
	// cw_wait_content, cw_wait_count, cw_wait_http, cw_wait_metric,
	// cw_metrics). Its exit status becomes Result.ExitCode; then the
	// guest powers off.
	Script string
	// Timeout bounds the whole run, boot included; 3 min when zero (a boot
	// takes 3 s on a quiet host, 30 s on a very busy one). The qemu
	// process is killed when it expires.
	Timeout time.Duration
	// MemoryMiB is the guest's memory; 256 MiB when zero. The initramfs,
	// unpacked into it, counts.
	MemoryMiB int
	// CPUs is the number of virtual CPUs; 1 when zero. Each one is a host
	// thread under TCG.
	CPUs int
	// Cmdline holds extra kernel command line parameters.
	Cmdline []string
	// QemuArgs holds extra qemu arguments, such as
	// "-global", "PIIX4_PM.disable_s3=0" to let the guest suspend to RAM.
	QemuArgs []string
	// Console, when set, receives the guest console as it comes.
	Console io.Writer
	// Qemu is the qemu-system-x86_64 binary; empty is the one on PATH.
	// VMClockQemu is qemu 10, which has the vmclock device.
	Qemu string
	// Kernel is the kernel to boot; empty is Kernel's.
	Kernel string
	// DataDir is qemu's -L (firmware and option ROMs); empty is qemu's
	// own default. An extracted qemu needs the host's /usr/share/qemu.
	DataDir string
	// Disk, when set, is a raw disk image attached as the guest's
	// /dev/vda (virtio, qemu's writeback cache: what the guest wrote to
	// the disk survives qemu being killed, what its own page cache held
	// does not). The virtio modules (DiskModules) are loaded before the
	// script starts.
	Disk string
	// Kill, when set, cuts the VM's power: qemu is killed with SIGKILL
	// Kill.Delay after the console first shows Kill.After. A run killed
	// so returns no error for it; Result.Killed says it happened.
	Kill *Kill
	// Modules are kernel modules of ModuleDir loaded, in order, before the
	// script starts (NetModules for a virtio NIC).
	Modules []string
}

// Kill says when Run cuts the power of the VM.
type Kill struct {
	After string
	Delay time.Duration
}

// DiskModules are the kernel modules Options.Disk needs, in load order
// (scripts/deps.d/42-disk.sh fetches them beside the kernel).
var DiskModules = []string{"virtio_ring", "virtio", "virtio_pci_legacy_dev", "virtio_pci_modern_dev", "virtio_pci", "virtio_blk"}

// NetModules are what a virtio NIC (-device virtio-net-pci) needs, in load
// order (scripts/deps.d/43-net.sh fetches the last three).
var NetModules = []string{"failover", "net_failover", "virtio_ring", "virtio", "virtio_pci_legacy_dev", "virtio_pci_modern_dev", "virtio_pci", "virtio_net"}

// modulesFile lists, in the guest, the modules /init loads first.
const modulesFile = "/etc/clockwatch-test/modules"

// ModuleDir returns the host directory of the modules fetched for the kernel
// the VM boots. When it is unknown the test fails under CI and is skipped
// elsewhere.
func ModuleDir(t testing.TB) string {
	t.Helper()
	pkg, err := os.ReadFile(Kernel(t) + ".package")
	if err != nil {
		testtool.Missing(t, "the kernel's package name is unknown ("+err.Error()+"); run scripts/test-deps.sh")
		return ""
	}
	return filepath.Join(filepath.Dir(Kernel(t)), "modules", strings.TrimSpace(string(pkg)))
}

// Result is what a run left on the guest's serial console.
type Result struct {
	// Console is everything the guest printed, with \r\n turned into \n.
	Console string
	// ExitCode is the script's exit status, or -1 when it did not finish.
	ExitCode int
	// Booted is how long the kernel took to reach /init (guest uptime).
	Booted time.Duration
	// ScriptTime is how long the script ran (guest uptime).
	ScriptTime time.Duration
	// Elapsed is the wall time of the whole run, from starting qemu.
	Elapsed time.Duration
	// Killed reports that Options.Kill cut the power.
	Killed bool
}

// Kernel returns the path of the kernel to boot. When it is missing the test
// fails under CI and is skipped elsewhere.
func Kernel(t testing.TB) string {
	t.Helper()
	k := os.Getenv(KernelEnv)
	if k == "" {
		k = DefaultKernel
	}
	if st, err := os.Stat(k); err != nil || st.Size() == 0 {
		testtool.Missing(t, fmt.Sprintf("kernel %s not found; run scripts/test-deps.sh to fetch it", k))
	}
	return k
}

// require skips the test under -short, and fails or skips it when qemu,
// busybox or the kernel is missing; else it returns their paths.
func require(t testing.TB) (qemu, busybox, kernel string) {
	t.Helper()
	testtool.Short(t)
	return testtool.Require(t, "qemu-system-x86_64"), testtool.Require(t, "busybox"), Kernel(t)
}

// Run boots a VM that runs opts.Script, waits until it powers off and returns
// its console. It fails or skips the test (testtool) when qemu, busybox or the
// kernel is missing. The error is non-nil when the VM does not power off in
// time, qemu fails, or the script does not exit 0; Result is never nil and
// holds the console for the test to log.
func Run(t testing.TB, opts Options) (*Result, error) {
	t.Helper()
	res := &Result{ExitCode: -1}
	vm, err := prepare(t, opts)
	if err != nil {
		return res, err
	}
	opts = vm.opts

	ctx, cancel := context.WithTimeout(context.Background(), opts.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, vm.qemu, vm.args("none")...)
	// The default Cancel kills cmd.Process: the qemu this run started, and
	// nothing else. Pdeathsig kills it too if the test binary dies first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 5 * time.Second
	var console bytes.Buffer
	var out io.Writer = &console
	if opts.Console != nil {
		out = io.MultiWriter(out, opts.Console)
	}
	if os.Getenv(ConsoleEnv) == "1" {
		out = io.MultiWriter(out, os.Stderr)
	}
	var killed atomic.Bool
	if opts.Kill != nil {
		out = &watchWriter{w: out, text: opts.Kill.After, fire: func() {
			time.AfterFunc(opts.Kill.Delay, func() {
				// The qemu this run started, by its own handle.
				if cmd.Process != nil && cmd.Process.Signal(syscall.SIGKILL) == nil {
					killed.Store(true)
				}
			})
		}}
	}
	cmd.Stdout = out
	cmd.Stderr = out
	start := time.Now()
	runErr := cmd.Run()
	res.Elapsed = time.Since(start)
	if res.Killed = killed.Load(); res.Killed && ctx.Err() == nil {
		// The cut may have come in the middle of a line.
		c := console.String()
		if i := strings.LastIndexByte(c, '\n'); i >= 0 {
			c = c[:i+1]
		}
		_ = finish(res, c, nil, false, opts.Timeout)
		return res, nil
	}
	return res, finish(res, console.String(), runErr, ctx.Err() != nil, opts.Timeout)
}

// finish fills res from the console of a qemu that has exited and says what
// went wrong: the VM was killed at its timeout, qemu failed, or the script
// did not finish or did not exit 0.
func finish(res *Result, console string, runErr error, timedOut bool, timeout time.Duration) error {
	res.Console = strings.ReplaceAll(console, "\r\n", "\n")
	var finished time.Duration
	res.ExitCode, res.Booted, finished = parseMarkers(res.Console)
	if finished > res.Booted {
		res.ScriptTime = finished - res.Booted
	}
	switch {
	case timedOut:
		return fmt.Errorf("the VM did not power off within %v (qemu killed)%s", timeout, tail(res.Console))
	case runErr != nil:
		return fmt.Errorf("running qemu: %w%s", runErr, tail(res.Console))
	case res.ExitCode < 0:
		return fmt.Errorf("the VM stopped before the script finished%s", tail(res.Console))
	case res.ExitCode != 0:
		return fmt.Errorf("the guest script exited with status %d%s", res.ExitCode, tail(res.Console))
	}
	return nil
}

// prepared is a VM ready to boot: its initramfs written, its options filled.
type prepared struct {
	opts         Options
	qemu, kernel string
	initrd       string
}

// prepare checks the tools, fills opts' defaults and writes the initramfs.
func prepare(t testing.TB, opts Options) (*prepared, error) {
	t.Helper()
	qemu, busybox, kernel := require(t)
	if opts.Qemu != "" {
		qemu = opts.Qemu
	}
	if opts.Kernel != "" {
		kernel = opts.Kernel
	}
	if opts.Disk != "" {
		for _, m := range DiskModules {
			if !slices.Contains(opts.Modules, m) {
				opts.Modules = append(opts.Modules, m)
			}
		}
	}
	if len(opts.Modules) > 0 {
		dir := ModuleDir(t)
		files := map[string]string{}
		for k, v := range opts.Files {
			files[k] = v
		}
		for _, m := range opts.Modules {
			p := filepath.Join(dir, m+".ko")
			if _, err := os.Stat(p); err != nil {
				testtool.Missing(t, p+" not found; run scripts/test-deps.sh (42-disk.sh, 43-net.sh)")
			}
			files["/lib/modules/"+m+".ko"] = p
		}
		opts.Files = files
	}
	if opts.Disk != "" {
		// The image is the test's: qemu writes to it and nothing else.
		opts.QemuArgs = append([]string{"-drive", "file=" + opts.Disk + ",format=raw,if=virtio,cache=writeback"}, opts.QemuArgs...)
	}
	initrd := filepath.Join(t.TempDir(), "initramfs.cpio")
	if err := writeInitramfs(initrd, busybox, opts); err != nil {
		return nil, err
	}
	if opts.Timeout <= 0 {
		opts.Timeout = defaultTimeout
	}
	if opts.MemoryMiB <= 0 {
		opts.MemoryMiB = defaultMemory
	}
	if opts.CPUs <= 0 {
		opts.CPUs = 1
	}
	return &prepared{opts: opts, qemu: qemu, kernel: kernel, initrd: initrd}, nil
}

// args is qemu's command line, with the monitor (HMP "none", or a QMP
// socket) and any extra arguments.
func (p *prepared) args(monitor string, extra ...string) []string {
	// cryptomgr.notests skips the crypto self-tests, a third of the boot
	// under TCG. no_timer_check skips the boot's check that the IO-APIC
	// timer ticks within a few host-loaded TCG milliseconds: it failed
	// once at host load 20 ("IO-APIC + timer doesn't work!", a panic).
	cmdline := append([]string{"console=ttyS0", "quiet", "panic=-1", "cryptomgr.notests", "no_timer_check", guest.CmdlineFlag}, p.opts.Cmdline...)
	args := []string{
		"-accel", "tcg",
		"-machine", "pc",
		"-smp", strconv.Itoa(p.opts.CPUs),
		"-m", strconv.Itoa(p.opts.MemoryMiB),
		"-nodefaults", "-no-user-config",
		"-display", "none",
		"-monitor", "none",
		"-serial", "stdio",
		"-no-reboot",
		"-kernel", p.kernel,
		"-initrd", p.initrd,
		"-append", strings.Join(cmdline, " "),
	}
	if monitor != "none" {
		args = append(args, "-qmp", "unix:"+monitor+",server=on,wait=off")
	}
	if p.opts.DataDir != "" {
		args = append(args, "-L", p.opts.DataDir)
	}
	args = append(args, p.opts.QemuArgs...)
	return append(args, extra...)
}

// initScript is PID 1 of the guest. devtmpfs comes first: busybox sh opens
// /dev/null to start anything in the background.
const initScript = `#!/bin/busybox sh
/bin/busybox mount -t devtmpfs dev /dev
/bin/busybox mount -t proc proc /proc
/bin/busybox --install -s /bin
export PATH=/bin HOME=/tmp
mount -t sysfs sys /sys
mount -t tmpfs -o mode=1777 tmp /tmp
mount -t tmpfs run /run
ip link set lo up
if [ -f ` + modulesFile + ` ]; then
	for m in $(cat ` + modulesFile + `); do insmod /lib/modules/$m.ko || echo "CW-ERROR insmod $m"; done
fi
echo "CW-BOOTED $(cut -d' ' -f1 /proc/uptime)"
sh ` + ScriptPath + `
echo "CW-EXIT $? $(cut -d' ' -f1 /proc/uptime)"
poweroff -f
`

// shellLib is sourced by every test script (LibPath): helpers to wait for
// what guest programs signal through files, polling every millisecond, never
// sleeping for a fixed time.
const shellLib = `# test/vm's shell functions. Their time limits are guest uptime, read
# without forking: under TCG a fork costs milliseconds, so counting polls would
# stretch a limit many times over.

# cw_deadline SECONDS: set _cw_deadline to uptime + SECONDS.
cw_deadline() {
	read -r _cw_up _cw_idle </proc/uptime
	_cw_deadline=$(( ${_cw_up%.*} + $1 ))
}
# cw_expired: true once the uptime passes _cw_deadline.
cw_expired() {
	read -r _cw_up _cw_idle </proc/uptime
	[ "${_cw_up%.*}" -ge "$_cw_deadline" ]
}
# cw_wait_file FILE [SECONDS]: wait until FILE exists (default 10 s).
cw_wait_file() {
	cw_deadline "${2:-10}"
	while [ ! -e "$1" ]; do
		! cw_expired || { echo "CW-TIMEOUT waiting for $1"; return 1; }
		usleep 1000
	done
}
# cw_wait_content FILE TEXT [SECONDS]: wait until FILE's first line is TEXT.
cw_wait_content() {
	cw_deadline "${3:-10}"
	while :; do
		_cw_v=
		{ read -r _cw_v <"$1"; } 2>/dev/null || true
		[ "$_cw_v" != "$2" ] || break
		! cw_expired || { echo "CW-TIMEOUT waiting for $1 to hold $2 (it holds: $_cw_v)"; return 1; }
		usleep 1000
	done
}
# cw_wait_count FILE PATTERN N [SECONDS]: wait until N lines of FILE match
# the grep pattern PATTERN.
cw_wait_count() {
	cw_deadline "${4:-10}"
	while [ "$(grep -c -e "$2" "$1" 2>/dev/null)" != "$3" ]; do
		! cw_expired || { echo "CW-TIMEOUT waiting for $3 lines matching $2 in $1 (got $(grep -c -e "$2" "$1" 2>/dev/null))"; return 1; }
		usleep 1000
	done
}
# cw_wait_http URL [SECONDS]: wait until URL answers 200 (default 30 s).
cw_wait_http() {
	cw_deadline "${2:-30}"
	until wget -q -O /dev/null "$1" 2>/dev/null; do
		! cw_expired || { echo "CW-TIMEOUT waiting for $1"; return 1; }
		usleep 10000
	done
}
# cw_wait_metric URL PATTERN [SECONDS]: wait until a line of the page at URL
# matches the grep pattern PATTERN (default 30 s).
cw_wait_metric() {
	cw_deadline "${3:-30}"
	until wget -q -O - "$1" 2>/dev/null | grep -q -e "$2"; do
		! cw_expired || { echo "CW-TIMEOUT waiting for $2 at $1"; return 1; }
		usleep 10000
	done
}
# cw_metrics TAG URL: print the Prometheus text exposition at URL, each line
# prefixed "CW-METRICS TAG " (vm.Result.Metrics reads them back).
cw_metrics() {
	wget -q -O /tmp/.cw_metrics "$2" || { echo "CW-ERROR fetching $2"; return 1; }
	sed "s/^/CW-METRICS $1 /" /tmp/.cw_metrics
}
`

func writeInitramfs(name, busybox string, opts Options) error {
	r := newInitramfs()
	for _, d := range []string{"bin", "dev", "proc", "sys", "tmp", "run", "etc"} {
		r.mkdirAll(d)
	}
	// The kernel opens the console for /init before anything is mounted.
	r.addCharDev("dev/console", 0o600, 5, 1)
	if err := checkStatic(busybox); err != nil {
		return err
	}
	if err := r.addHostFile("bin/busybox", busybox); err != nil {
		return err
	}
	r.addSymlink("bin/sh", "busybox")
	r.addBytes("init", 0o755, []byte(initScript))
	r.addBytes(guest.MarkerFile, 0o644, []byte("clockwatch test VM\n"))
	r.addBytes(LibPath, 0o644, []byte(shellLib))
	r.addBytes(ScriptPath, 0o755, []byte(". "+LibPath+"\n"+opts.Script))
	r.addBytes("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\n"))
	r.addBytes("etc/group", 0o644, []byte("root:x:0:\n"))
	if len(opts.Modules) > 0 {
		r.addBytes(strings.TrimPrefix(modulesFile, "/"), 0o644, []byte(strings.Join(opts.Modules, "\n")+"\n"))
	}
	for guestPath, hostPath := range opts.Files {
		if err := checkStatic(hostPath); err != nil {
			return err
		}
		if err := r.addHostFile(guestPath, hostPath); err != nil {
			return err
		}
	}
	for guestPath, hostPath := range opts.Dynamic {
		libs, err := sharedLibraries(hostPath)
		if err != nil {
			return err
		}
		for _, lib := range libs {
			if err := r.addHostFile(lib, lib); err != nil {
				return err
			}
		}
		if err := r.addHostFile(guestPath, hostPath); err != nil {
			return err
		}
	}
	f, err := os.Create(name)
	if err != nil {
		return fmt.Errorf("creating the initramfs: %w", err)
	}
	if err := r.writeTo(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing the initramfs: %w", err)
	}
	return nil
}

// checkStatic returns an error for a dynamically linked ELF file: it would
// not start in a guest without libc. Files that are not ELF pass.
func checkStatic(name string) error {
	f, err := elf.Open(name)
	if err != nil {
		var fe *elf.FormatError
		if errors.As(err, &fe) {
			return nil
		}
		if _, statErr := os.Stat(name); statErr != nil {
			return fmt.Errorf("checking %s: %w", name, statErr)
		}
		return nil
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked: the guest has no libc (build with CGO_ENABLED=0, install busybox-static)", name)
		}
	}
	return nil
}

var (
	exitRe   = regexp.MustCompile(`(?m)^CW-EXIT (\d+) ([0-9.]+)$`)
	bootedRe = regexp.MustCompile(`(?m)^CW-BOOTED ([0-9.]+)$`)
)

// parseMarkers reads the lines /init prints around the script: the script's
// exit status, and the guest's uptime when the script started and ended.
func parseMarkers(console string) (exitCode int, booted, finished time.Duration) {
	exitCode = -1
	if m := exitRe.FindAllStringSubmatch(console, -1); m != nil {
		last := m[len(m)-1]
		exitCode, _ = strconv.Atoi(last[1])
		finished = seconds(last[2])
	}
	if m := bootedRe.FindStringSubmatch(console); m != nil {
		booted = seconds(m[1])
	}
	return exitCode, booted, finished
}

func seconds(s string) time.Duration {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0
	}
	return time.Duration(f * float64(time.Second))
}

// tail returns the end of the console for an error message.
func tail(console string) string {
	const max = 4000
	if console == "" {
		return " (no console output)"
	}
	if len(console) > max {
		console = "…" + console[len(console)-max:]
	}
	return "; console:\n" + console
}

// watchWriter passes what it is written on to w and calls fire once, the
// first time text has gone through (across writes).
type watchWriter struct {
	w     io.Writer
	text  string
	fire  func()
	tail  []byte
	fired bool
}

func (w *watchWriter) Write(p []byte) (int, error) {
	if !w.fired {
		w.tail = append(w.tail, p...)
		if bytes.Contains(w.tail, []byte(w.text)) {
			w.fired = true
			w.fire()
		}
		if keep := len(w.text); len(w.tail) > keep {
			w.tail = append(w.tail[:0], w.tail[len(w.tail)-keep:]...)
		}
	}
	return w.w.Write(p)
}
