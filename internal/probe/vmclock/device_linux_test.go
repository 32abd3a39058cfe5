//go:build linux

package vmclock

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func writePage(t *testing.T, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "vmclock0")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// openWithin opens path, failing the test if the open blocks.
func openWithin(t *testing.T, path string) (Device, error) {
	t.Helper()
	type result struct {
		d   Device
		err error
	}
	done := make(chan result, 1)
	go func() { d, err := OpenDevice(path); done <- result{d, err} }()
	select {
	case r := <-done:
		return r.d, r.err
	case <-time.After(5 * time.Second):
		t.Fatalf("OpenDevice(%s) blocked", path)
		return nil, nil
	}
}

// TestOpenRefusesShortOrSpecialVMClock: a 0-byte file as the device crashed
// the daemon with SIGBUS (fatal error: fault, seqlock.go:34), a 60-byte file
// was taken as a valid page (the rest of the mapped page reads as zeros), and
// a FIFO kept the source "starting" for ever with SIGTERM ignored (issue 32,
// items 2 and 6). Each is an error now, none blocks.
func TestOpenRefusesShortOrSpecialVMClock(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	full := page()
	for _, tc := range []struct {
		name, path string
		want       error
		text       string
	}{
		{"0 bytes", writePage(t, nil), ErrNotVMClock, "is a regular file of 0 bytes, shorter than a VMClock page (at least 104)"},
		{"60 bytes", writePage(t, full[:60]), ErrNotVMClock, "is a regular file of 60 bytes"},
		{"FIFO", fifo, nil, "is a FIFO, not a character device or a regular file"},
		{"directory", t.TempDir(), nil, "is a directory"},
		{"/dev/zero: a device, but not a page", "/dev/zero", ErrNotVMClock, "magic 0x00000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := openWithin(t, tc.path)
			if err == nil {
				defer d.Close()
				_, err = d.Read()
			}
			if err == nil || tc.want != nil && !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
				t.Errorf("open and read: %v, want %v with %q", err, tc.want, tc.text)
			}
			if errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%v: reads as an absent device", err)
			}
		})
	}
	d, err := openWithin(t, writePage(t, full))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if p, err := d.Read(); err != nil || p.DisruptionMarker != 0x1122334455667788 {
		t.Errorf("a whole page: %+v, %v", p, err)
	}
}

// TestCrashTruncatedVMClock: the page's file truncated while mapped
// crashed the daemon with SIGBUS (issue 32, item 2). The size is checked
// before each read, and a truncation between that check and the read
// faults into an error (ReadMapped), never a crash.
func TestCrashTruncatedVMClock(t *testing.T) {
	t.Parallel()
	b := make([]byte, 8192) // two pages: the read of the first page's tail faults once the file is empty
	copy(b, page())
	path := writePage(t, b)
	d, err := OpenDevice(path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Read(); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Read(); !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "shrank from 4096 to 0 bytes") {
		t.Errorf("Read after truncation: %v, want ErrTruncated", err)
	}
	// The fault itself: the mapping read after its file went, as when
	// the truncation comes between the size check and the read.
	md := d.(*mappedDevice)
	if _, err := ReadMapped(md.mem[:md.size]); !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "faulted") {
		t.Errorf("ReadMapped of a truncated mapping: %v, want ErrTruncated from the fault", err)
	}
}

// TestLogFloodVMClockNeverReadable: mode on with a page that never reads
// logged an ERROR at every poll (969 lines in 10 s at a 10 ms poll; issue
// 32, item 6). A failure is logged when it changes; the failures metric
// counts each.
func TestLogFloodVMClockNeverReadable(t *testing.T) {
	t.Parallel()
	bad := page()
	bad[offMagic] = 0 // not a page
	path := writePage(t, bad)
	var log logBuf
	cfg := DefaultConfig()
	cfg.Mode, cfg.Path, cfg.PollInterval = ModeOn, path, 10*time.Millisecond
	p := NewPoller(cfg, slog.New(slog.NewTextHandler(&log, nil)), Options{})
	defer func() {
		if p.dev != nil {
			p.dev.Close()
		}
	}()
	for range 100 {
		p.Poll()
	}
	if s := p.Snapshot(); s.Polls != 100 || s.Failures != 100 || s.Up {
		t.Errorf("snapshot: %d polls, %d failures, up %v; want 100, 100, down", s.Polls, s.Failures, s.Up)
	}
	if l := log.lines(); len(l) != 1 || !strings.Contains(l[0], "cannot read the VMClock page") {
		t.Errorf("log after 100 failed polls: %d lines %q, want one", len(l), l)
	}
	// A different failure is logged once more; a success, then the same
	// failure again, once more.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	p.dev.Close()
	p.dev = nil
	for range 10 {
		p.Poll()
	}
	if l := log.lines(); len(l) != 2 || !strings.Contains(l[1], "is a FIFO") {
		t.Errorf("log after a FIFO took its place: %q, want one more line naming the FIFO", l)
	}
}
