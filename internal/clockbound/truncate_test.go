//go:build linux

package clockbound

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/stepdown/boundedtime"
)

// TestCrashTruncatedSegment: the segment truncated under clockwatch crashed
// it with SIGBUS (fatal error: fault, segment.go:186; issue 32, item 2).
// Write finds the file changed before its stores (truncated, removed,
// replaced) and a truncation during them faults into ErrTruncated.
func TestCrashTruncatedSegment(t *testing.T) {
	t.Parallel()
	rec := Record{AsOf: time.Second, VoidAfter: 1001 * time.Second, Bound: time.Millisecond, MaxDriftPPB: 15000, Status: boundedtime.StatusSynchronized}
	for _, tc := range []struct {
		name   string
		change func(path string) error
		want   error
		text   string
	}{
		{"truncated to 0", func(p string) error { return os.Truncate(p, 0) }, ErrTruncated, "is 0 bytes, not 80"},
		{"truncated to 40", func(p string) error { return os.Truncate(p, 40) }, ErrTruncated, "is 40 bytes, not 80"},
		{"removed", os.Remove, ErrReplaced, "no longer the file clockwatch maps"},
		{"replaced", func(p string) error {
			tmp := p + ".other"
			if err := os.WriteFile(tmp, make([]byte, 80), 0o644); err != nil {
				return err
			}
			return os.Rename(tmp, p)
		}, ErrReplaced, "no longer the file clockwatch maps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "shm0")
			s := newSegment(t, path)
			if err := s.Write(rec); err != nil {
				t.Fatal(err)
			}
			if err := tc.change(path); err != nil {
				t.Fatal(err)
			}
			err := s.Write(rec)
			if tc.want == ErrReplaced {
				// Write's own check is the size; the path is the
				// periodic rewrite's (Check).
				if err != nil {
					t.Fatalf("Write after the change: %v", err)
				}
				err = s.Check()
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("after the change: %v, want %v with %q", err, tc.want, tc.text)
			}
			if err := s.Recreate(); err != nil {
				t.Fatal(err)
			}
			if err := s.Write(rec); err != nil {
				t.Fatalf("Write after Recreate: %v", err)
			}
			r, err := boundedtime.Open(path)
			if err != nil {
				t.Fatalf("a reader after Recreate: %v", err)
			}
			r.Close()
		})
	}
	// The store itself faulting: the truncation lands between the check
	// and the stores.
	path := filepath.Join(t.TempDir(), "shm0")
	s := newSegment(t, path)
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.faultSafe(func() { s.write(rec) }); !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "faulted") {
		t.Errorf("stores into a truncated mapping: %v, want ErrTruncated from the fault", err)
	}
}
