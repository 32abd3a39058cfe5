package guest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
)

const (
	// CmdlineFlag is the kernel command line parameter test/vm boots every
	// guest with. The host's kernel command line cannot gain it at run time,
	// which is what makes it a safe marker.
	CmdlineFlag = "clockwatch.testvm=1"
	// MarkerFile is a file only test/vm's initramfs holds (path relative to
	// the root, as io/fs wants it).
	MarkerFile = "etc/clockwatch-testvm"
	// InitPath is the init script test/vm's initramfs runs as PID 1.
	InitPath = "/init"
	// ResultPrefix starts every machine-readable line on the guest console.
	ResultPrefix = "CW-RESULT "
)

// ErrNotTestVM is returned by CheckTestVM when any of its checks fails.
var ErrNotTestVM = errors.New("not inside clockwatch's test VM")

// CheckTestVM reports whether the root file system root is that of a guest
// booted by test/vm: the kernel command line holds CmdlineFlag, PID 1 runs
// InitPath, and MarkerFile exists. Programs that change the clock call it
// first and refuse to run when it fails, so that they can never step the
// clock of the machine the tests run on. root is os.DirFS("/") outside tests.
func CheckTestVM(root fs.FS) error {
	cmdline, err := fs.ReadFile(root, "proc/cmdline")
	if err != nil {
		return fmt.Errorf("%w: reading /proc/cmdline: %w", ErrNotTestVM, err)
	}
	if !hasField(string(cmdline), CmdlineFlag) {
		return fmt.Errorf("%w: the kernel command line lacks %s", ErrNotTestVM, CmdlineFlag)
	}
	init1, err := fs.ReadFile(root, "proc/1/cmdline")
	if err != nil {
		return fmt.Errorf("%w: reading /proc/1/cmdline: %w", ErrNotTestVM, err)
	}
	if !runsInit(init1) {
		return fmt.Errorf("%w: PID 1 is %q, not %s", ErrNotTestVM, strings.ReplaceAll(string(bytes.TrimRight(init1, "\x00")), "\x00", " "), InitPath)
	}
	if _, err := fs.Stat(root, MarkerFile); err != nil {
		return fmt.Errorf("%w: /%s: %w", ErrNotTestVM, MarkerFile, err)
	}
	return nil
}

func hasField(s, field string) bool {
	for _, f := range strings.Fields(s) {
		if f == field {
			return true
		}
	}
	return false
}

// runsInit reports whether a NUL-separated /proc/PID/cmdline is InitPath, run
// either directly or by the interpreter its #! line names (then InitPath is
// the last argument: "/bin/busybox sh /init").
func runsInit(cmdline []byte) bool {
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	return args[0] == InitPath || (len(args) > 1 && args[len(args)-1] == InitPath)
}

// Emit writes v as one result line: ResultPrefix, then a JSON object with
// "kind" set to kind and v's fields. The line goes out in a single write, so
// that lines from several guest programs sharing the console do not mix.
func Emit(w io.Writer, kind string, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding %s result: %w", kind, err)
	}
	var line bytes.Buffer
	line.WriteString(ResultPrefix)
	fmt.Fprintf(&line, `{"kind":%q`, kind)
	if inner := bytes.TrimSpace(body); len(inner) > 2 && inner[0] == '{' {
		line.WriteByte(',')
		line.Write(inner[1:])
	} else {
		line.WriteByte('}')
	}
	line.WriteByte('\n')
	if _, err := w.Write(line.Bytes()); err != nil {
		return fmt.Errorf("writing %s result: %w", kind, err)
	}
	return nil
}
