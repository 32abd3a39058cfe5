//go:build linux

package boundedtime

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// liveSegment writes a segment that reads as synchronized now, with the
// VMClock flag and marker 2 when flag is set.
func liveSegment(t *testing.T, flag bool) string {
	t.Helper()
	mono, err := monotonic()
	if err != nil {
		t.Fatal(err)
	}
	s := good()
	s.asOf = [2]int64{int64(mono / time.Second), int64(mono % time.Second)}
	s.voidAfter = [2]int64{s.asOf[0] + 1000, 0}
	if flag {
		s.marker, s.support = 2, 1
	}
	return writeFile(t, s.bytes())
}

// TestCrashTruncatedSegmentReader: the reader's loads from a segment
// truncated under its mapping raised SIGBUS, which killed the application
// (issue 32, item 2: every reader the clients ship). They return
// ErrTruncated now; a FIFO in the segment's place is refused, not waited on.
func TestCrashTruncatedSegmentReader(t *testing.T) {
	t.Parallel()
	path := liveSegment(t, false)
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, _, _, err := r.Now(); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := r.Now(); !errors.Is(err, ErrTruncated) {
		t.Errorf("Now() after truncation: %v, want ErrTruncated", err)
	}
	if _, _, _, err := r.NowNanos(); !errors.Is(err, ErrTruncated) {
		t.Errorf("NowNanos() after truncation: %v, want ErrTruncated", err)
	}
	if _, err := r.Snapshot(); !errors.Is(err, ErrTruncated) {
		t.Errorf("Snapshot() after truncation: %v, want ErrTruncated", err)
	}
	if ok, err := r.SurelyBefore(time.Now().Add(time.Hour)); ok || !errors.Is(err, ErrTruncated) {
		t.Errorf("SurelyBefore after truncation: %v, %v; want false, ErrTruncated", ok, err)
	}

	fifo := filepath.Join(t.TempDir(), "shm0")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := Open(fifo); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotInitialized) {
			t.Errorf("Open(FIFO) = %v, want ErrNotInitialized (not a regular file)", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Open(FIFO) blocked")
	}
}

// TestCrashShortVMClockForReader: a 0-byte file as the VMClock device
// crashed the reader with SIGBUS at its magic check, and one truncated after
// it was mapped at the marker's read; a 60-byte one passed as a page; a FIFO
// hung Now (issue 32, items 2 and 6). Each makes the status unknown.
func TestCrashShortVMClockForReader(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	truncated := write("truncated", vmclockPage(2))
	for _, tc := range []struct {
		name, device string
		before       func()
		want         Status
	}{
		{"a whole page", write("page", vmclockPage(2)), nil, StatusSynchronized},
		{"0 bytes", write("empty", nil), nil, StatusUnknown},
		{"60 bytes", write("short", vmclockPage(2)[:60]), nil, StatusUnknown},
		{"FIFO", fifo, nil, StatusUnknown},
		{"truncated after mapping", truncated, func() {
			if err := os.Truncate(truncated, 0); err != nil {
				t.Fatal(err)
			}
		}, StatusUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := OpenVMClock(liveSegment(t, true), tc.device)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if tc.before != nil {
				if _, _, st, err := r.Now(); err != nil || st != StatusSynchronized {
					t.Fatalf("before the truncation: %v, %v", st, err)
				}
				tc.before()
			}
			done := make(chan Status, 1)
			go func() {
				_, _, st, err := r.Now()
				if err != nil {
					t.Error(err)
				}
				done <- st
			}()
			select {
			case st := <-done:
				if st != tc.want {
					t.Errorf("status %v, want %v", st, tc.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Now() blocked on the device")
			}
		})
	}
}
