package throwawayroot_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clockwatch/clockwatch/internal/testtool"
	"github.com/clockwatch/clockwatch/internal/throwawayroot"
)

// envChild makes the test binary, started again by a test below, act as the
// child inside the throwaway root; its value is the scratch directory.
const envChild = "CLOCKWATCH_THROWAWAYROOT_TEST_CHILD"

const probe = "/etc/clockwatch-throwawayroot-probe"

// TestMain lets the test binary be the child of TestWritesStayInside.
func TestMain(m *testing.M) {
	if scratch := os.Getenv(envChild); scratch != "" {
		os.Exit(child(scratch))
	}
	os.Exit(m.Run())
}

// child enters the throwaway root and changes what a package install changes.
func child(scratch string) int {
	if err := throwawayroot.Enter(scratch); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 1
	}
	for _, f := range []func() error{
		func() error { return os.WriteFile(probe, []byte("x\n"), 0o644) },
		func() error { return os.MkdirAll("/run/clockwatch", 0o755) },
		func() error { return os.MkdirAll("/var/lib/clockwatch", 0o750) },
		func() error {
			f, err := os.OpenFile("/etc/passwd", os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteString("clockwatch-probe:x:999:999::/nonexistent:/usr/sbin/nologin\n")
			return err
		},
	} {
		if err := f(); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			return 1
		}
	}
	if _, err := os.Stat(probe); err != nil {
		os.Stderr.WriteString("inside, the probe is not there: " + err.Error() + "\n")
		return 1
	}
	os.Stdout.WriteString("inside\n")
	return 0
}

func TestWritesStayInside(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		testtool.Missing(t, "mounting an overlay needs root")
	}
	before, err := throwawayroot.TakeHost()
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := throwawayroot.Command(exec.Command(self))
	cmd.Env = append(os.Environ(), envChild+"="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "inside" {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if _, err := os.Stat(probe); err == nil {
		os.Remove(probe)
		t.Fatalf("%s, written inside the throwaway root, is on the host", probe)
	}
	after, err := throwawayroot.TakeHost()
	if err != nil {
		t.Fatal(err)
	}
	if d := before.Diff(after); len(d) != 0 {
		t.Errorf("the host changed:\n%s", strings.Join(d, "\n"))
	}
	// The child's mounts went with its namespace.
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mounts), "clockwatch-throwaway") {
		t.Errorf("a throwaway mount shows in the host's namespace:\n%s", mounts)
	}
}

// TestEnterRefusesTheHostNamespace calls Enter in the test process itself,
// which shares its parent's mount namespace: it must refuse before mounting.
func TestEnterRefusesTheHostNamespace(t *testing.T) {
	t.Parallel()
	scratch := t.TempDir()
	err := throwawayroot.Enter(scratch)
	if err == nil || !strings.Contains(err.Error(), "refusing to mount over the host") {
		t.Fatalf("Enter in the host's namespace: %v, want a refusal", err)
	}
	if entries, _ := os.ReadDir(scratch); len(entries) != 0 {
		t.Errorf("Enter wrote into %s before refusing: %v", scratch, entries)
	}
	if _, err := os.Stat(filepath.Join(scratch, "upper")); err == nil {
		t.Error("upper exists")
	}
}

func TestSnapshotDiff(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	status := filepath.Join(dir, "status")
	os.WriteFile(status, []byte("Package: a\nStatus: install ok installed\n\nPackage: b\nStatus: install ok installed\n"), 0o644)
	tr := filepath.Join(dir, "tree")
	before, err := throwawayroot.Take([]string{status}, []string{tr})
	if err != nil {
		t.Fatal(err)
	}
	if d := before.Diff(before); len(d) != 0 {
		t.Fatalf("a snapshot differs from itself: %q", d)
	}
	os.WriteFile(status, []byte("Package: a\nStatus: install ok installed\n\nPackage: clockwatch\nStatus: deinstall ok config-files\n\nPackage: b\nStatus: install ok installed\n"), 0o644)
	os.Mkdir(tr, 0o750)
	after, err := throwawayroot.Take([]string{status}, []string{tr})
	if err != nil {
		t.Fatal(err)
	}
	d := before.Diff(after)
	if len(d) != 2 || !strings.Contains(d[0], `added ["Package: clockwatch"]`) || !strings.Contains(d[1], tr+" absent") {
		t.Errorf("diff: %q", d)
	}
}
