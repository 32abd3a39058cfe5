package chrony

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"
)

// TestOpenRefusesChronyConfFIFO: the chrony.conf audit and chronyd's pid
// file were read with os.ReadFile: a FIFO among the included files, or as
// the pid file, hung the reader (issue 32, item 3: every file clockwatch
// reads goes through safefile). Both are refused at once.
func TestOpenRefusesChronyConfFIFO(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	conf := filepath.Join(dir, "chrony.conf")
	if err := os.MkdirAll(filepath.Join(dir, "conf.d"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, []byte("rtcsync\nconfdir "+filepath.Join(dir, "conf.d")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "conf.d", "a.conf"), []byte("makestep 1 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "conf.d", "b.conf")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	pid := filepath.Join(dir, "chronyd.pid")
	if err := syscall.Mkfifo(pid, 0o600); err != nil {
		t.Fatal(err)
	}
	within := func(what string, f func() error) error {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- f() }()
		select {
		case err := <-done:
			return err
		case <-time.After(5 * time.Second):
			t.Fatalf("%s blocked", what)
			return nil
		}
	}
	err := within("the audit", func() error { _, err := AuditFile(conf); return err })
	if err == nil || !strings.Contains(err.Error(), fifo+" is a FIFO, not a regular file") {
		t.Errorf("AuditFile with a FIFO in conf.d: %v, want it refused", err)
	}
	err = within("RunningConf", func() error {
		_, _, err := RunningConf(fstest.MapFS{}, pid, "/etc/chrony/chrony.conf")
		return err
	})
	if err != nil {
		t.Errorf("RunningConf with a FIFO as the pid file: %v, want it ignored like a missing one", err)
	}
	if err := os.Remove(fifo); err != nil {
		t.Fatal(err)
	}
	a, err := AuditFile(conf)
	if err != nil || len(a.Files) != 2 {
		t.Errorf("the audit without the FIFO: %+v, %v; want chrony.conf and a.conf read", a, err)
	}
}
