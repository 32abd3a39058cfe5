package vm

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/internal/testtool"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

func smallInitramfs(t *testing.T) []byte {
	t.Helper()
	r := newInitramfs()
	r.mkdirAll("proc")
	r.addCharDev("/dev/console", 0o600, 5, 1)
	r.addBytes("init", 0o755, []byte("#!/bin/sh\necho hi\n"))
	r.addSymlink("bin/sh", "busybox")
	// Made here: git would not keep its mode.
	host := filepath.Join(t.TempDir(), "hostfile.txt")
	if err := os.WriteFile(host, []byte("a host file\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(host, 0o640); err != nil { // whatever the umask
		t.Fatal(err)
	}
	if err := r.addHostFile("/etc/deep/dir/hostfile.txt", host); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := r.writeTo(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestInitramfsFormat checks the archive byte for byte against a golden file,
// and has busybox cpio, an independent reader of the newc format, list it.
func TestInitramfsFormat(t *testing.T) {
	t.Parallel()
	archive := smallInitramfs(t)
	golden(t, "small.cpio", archive)
	if len(archive)%4 != 0 {
		t.Errorf("archive is %d bytes, not a multiple of 4", len(archive))
	}

	busybox := testtool.Require(t, "busybox")
	cmd := exec.Command(busybox, "cpio", "-tv")
	cmd.Stdin = bytes.NewReader(archive)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("busybox cpio -tv: %v", err)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		// mode owner size date time name [-> target]
		got = append(got, f[0]+" "+f[2]+" "+strings.Join(f[5:], " "))
	}
	want := []string{
		"drwxr-xr-x 0 bin",
		"lrwxrwxrwx 0 bin/sh -> busybox",
		"drwxr-xr-x 0 dev",
		"crw------- 0 dev/console",
		"drwxr-xr-x 0 etc",
		"drwxr-xr-x 0 etc/deep",
		"drwxr-xr-x 0 etc/deep/dir",
		"-rw-r----- 12 etc/deep/dir/hostfile.txt",
		"-rwxr-xr-x 18 init",
		"drwxr-xr-x 0 proc",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("busybox cpio -tv listing mismatch (-want +got):\n%s\nfull output:\n%s", diff, out)
	}
}

func TestCheckStatic(t *testing.T) {
	t.Parallel()
	busybox := testtool.Require(t, "busybox")
	tests := []struct {
		name    string
		path    string
		wantErr string
	}{
		{name: "static busybox", path: busybox},
		{name: "not ELF", path: "testdata/small.cpio"},
		{name: "dynamic executable", path: "/bin/sh", wantErr: "is dynamically linked"},
		{name: "missing", path: "testdata/no-such-file", wantErr: "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := checkStatic(tt.path)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("checkStatic(%s) = %v, want error containing %q", tt.path, err, tt.wantErr)
			}
		})
	}
}

func TestParseMarkers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                   string
		console                string
		wantExit               int
		wantBooted, wantFinish time.Duration
	}{
		{name: "finished", console: "CW-BOOTED 2.51\nhello\nCW-EXIT 0 3.75\n[ 3.8] reboot: Power down\n",
			wantExit: 0, wantBooted: 2510 * time.Millisecond, wantFinish: 3750 * time.Millisecond},
		{name: "failed script", console: "CW-BOOTED 2.00\nCW-EXIT 3 2.25\n", wantExit: 3, wantBooted: 2 * time.Second, wantFinish: 2250 * time.Millisecond},
		{name: "script echoing a fake marker first", console: "CW-BOOTED 1.0\nCW-EXIT 0 1.1\nCW-EXIT 7 1.5\n", wantExit: 7, wantBooted: time.Second, wantFinish: 1500 * time.Millisecond},
		{name: "kernel panic before init", console: "[ 0.5] Kernel panic - not syncing\n", wantExit: -1},
		{name: "marker not at line start", console: "CW-BOOTED 1.0\nx CW-EXIT 0 1.1\n", wantExit: -1, wantBooted: time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			exit, booted, finished := parseMarkers(tt.console)
			if exit != tt.wantExit || booted != tt.wantBooted || finished != tt.wantFinish {
				t.Errorf("parseMarkers() = %d, %v, %v, want %d, %v, %v", exit, booted, finished, tt.wantExit, tt.wantBooted, tt.wantFinish)
			}
		})
	}
}

func TestSharedLibraries(t *testing.T) {
	t.Parallel()
	busybox := testtool.Require(t, "busybox")
	if libs, err := sharedLibraries(busybox); err != nil || len(libs) != 0 {
		t.Errorf("sharedLibraries(static busybox) = %v, %v; want none", libs, err)
	}
	libs, err := sharedLibraries("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, l := range libs {
		if !filepath.IsAbs(l) {
			t.Errorf("%s is not an absolute path", l)
		}
		names[filepath.Base(l)] = true
	}
	for _, want := range []string{"ld-linux-x86-64.so.2", "libc.so.6"} {
		if !names[want] {
			t.Errorf("sharedLibraries(/bin/sh) = %v, lacks %s", libs, want)
		}
	}
}
