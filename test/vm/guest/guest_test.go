package guest

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

func TestCheckTestVM(t *testing.T) {
	t.Parallel()
	vmRoot := func() fstest.MapFS {
		return fstest.MapFS{
			"proc/cmdline":   {Data: []byte("console=ttyS0 quiet panic=-1 clockwatch.testvm=1\n")},
			"proc/1/cmdline": {Data: []byte("/bin/busybox\x00sh\x00/init\x00")},
			MarkerFile:       {Data: []byte("clockwatch test VM\n")},
		}
	}
	tests := []struct {
		name    string
		edit    func(fstest.MapFS)
		wantErr string // "" for no error
	}{
		{name: "the test VM", edit: func(fstest.MapFS) {}},
		{name: "init run directly", edit: func(r fstest.MapFS) { r["proc/1/cmdline"] = &fstest.MapFile{Data: []byte("/init\x00")} }},
		{name: "no flag on the kernel command line", wantErr: "the kernel command line lacks clockwatch.testvm=1",
			edit: func(r fstest.MapFS) {
				r["proc/cmdline"] = &fstest.MapFile{Data: []byte("BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet\n")}
			}},
		{name: "flag only as part of another parameter", wantErr: "lacks clockwatch.testvm=1",
			edit: func(r fstest.MapFS) {
				r["proc/cmdline"] = &fstest.MapFile{Data: []byte("x=clockwatch.testvm=1 clockwatch.testvm=10\n")}
			}},
		{name: "PID 1 is systemd", wantErr: `PID 1 is "/sbin/init splash", not /init`,
			edit: func(r fstest.MapFS) { r["proc/1/cmdline"] = &fstest.MapFile{Data: []byte("/sbin/init\x00splash\x00")} }},
		{name: "no marker file", wantErr: "/etc/clockwatch-testvm",
			edit: func(r fstest.MapFS) { delete(r, MarkerFile) }},
		{name: "no /proc", wantErr: "reading /proc/cmdline",
			edit: func(r fstest.MapFS) { delete(r, "proc/cmdline"); delete(r, "proc/1/cmdline") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := vmRoot()
			tt.edit(root)
			err := CheckTestVM(root)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("CheckTestVM() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrNotTestVM) {
				t.Fatalf("CheckTestVM() = %v, want ErrNotTestVM mentioning %q", err, tt.wantErr)
			}
		})
	}
}

// TestCheckTestVMOnThisMachine is the guard that matters: on the machine the
// tests run on, the programs that step the clock must refuse to.
func TestCheckTestVMOnThisMachine(t *testing.T) {
	t.Parallel()
	if err := CheckTestVM(os.DirFS("/")); !errors.Is(err, ErrNotTestVM) {
		t.Fatalf("CheckTestVM(/) = %v on the host, want ErrNotTestVM", err)
	}
}

func TestEmit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		kind string
		v    any
		want string
	}{
		{name: "struct", kind: KindGap, v: GapReading{GapNS: -5, MonoNS: 7},
			want: `CW-RESULT {"kind":"gap","gap_ns":-5,"mono_ns":7}` + "\n"},
		{name: "empty object", kind: "ready", v: struct{}{}, want: `CW-RESULT {"kind":"ready"}` + "\n"},
		{name: "map", kind: "x", v: map[string]int{"a": 1}, want: `CW-RESULT {"kind":"x","a":1}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var w countingWriter
			if err := Emit(&w, tt.kind, tt.v); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, w.buf.String()); diff != "" {
				t.Errorf("Emit() mismatch (-want +got):\n%s", diff)
			}
			if w.writes != 1 {
				t.Errorf("Emit() made %d writes, want 1 (lines from several programs must not mix)", w.writes)
			}
		})
	}
}

type countingWriter struct {
	buf    bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.buf.Write(p)
}
