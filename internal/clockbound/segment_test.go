package clockbound

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/stepdown/boundedtime"
)

func newSegment(t testing.TB, path string) *Segment {
	t.Helper()
	s, err := Create(path, 0o644, -1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func generation(t testing.TB, path string) uint16 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return binary.NativeEndian.Uint16(b[boundedtime.OffGeneration:])
}

func TestCreate(t *testing.T) {
	t.Parallel()
	old := syscallUmask(0o077) // as under systemd's UMask=0077
	defer syscallUmask(old)
	path := filepath.Join(t.TempDir(), "clockbound", "shm0")
	s := newSegment(t, path)
	for p, want := range map[string]os.FileMode{filepath.Dir(path): 0o755 | os.ModeDir, path: 0o644} {
		if fi, err := os.Stat(p); err != nil || fi.Mode() != want {
			t.Errorf("%s: mode %v (%v), want %v", p, fi.Mode(), err, want)
		}
	}
	b, _ := os.ReadFile(path)
	if len(b) != boundedtime.Size || !strings.HasPrefix(string(b), "\x4e\x5a\x4d\x41\x00\x02\x42\x43") {
		t.Fatalf("fresh segment = % x, want 80 bytes starting with the magic as two little-endian u32s", b)
	}
	if g := generation(t, path); g != 0 {
		t.Errorf("fresh segment generation = %d, want 0 until the first write", g)
	}
	if _, err := boundedtime.Open(path); err == nil {
		t.Error("a reader accepted the segment before its first write")
	}
	if _, err := Create(path, 0o644, -1); err == nil || !strings.Contains(err.Error(), "another clockwatch") {
		t.Errorf("second Create() on a locked segment = %v, want refused", err)
	}
	s.Write(Record{AsOf: time.Second, VoidAfter: 1001 * time.Second, Bound: time.Millisecond, MaxDriftPPB: 15000, Status: boundedtime.StatusSynchronized})
	if g := generation(t, path); g != 2 {
		t.Errorf("generation after one write = %d, want 2", g)
	}
	ino := inode(t, path)
	s.Close()

	// A restart reuses the valid segment in place: readers' mappings stay live.
	r, err := boundedtime.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s2 := newSegment(t, path)
	if inode(t, path) != ino {
		t.Error("a valid segment was replaced on restart, not reused")
	}
	s2.Write(Record{AsOf: 2 * time.Second, VoidAfter: 1002 * time.Second, Bound: 2 * time.Millisecond, MaxDriftPPB: 15000, Status: boundedtime.StatusSynchronized})
	if snap, err := r.Snapshot(); err != nil || snap.Bound != 2*time.Millisecond || snap.Generation != 4 {
		t.Errorf("reader opened before the restart sees %+v, %v; want bound 2ms at generation 4", snap, err)
	}
}

func TestCreateReplacesGarbage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "shm0")
	if err := os.WriteFile(path, []byte("not a segment"), 0o600); err != nil {
		t.Fatal(err)
	}
	newSegment(t, path)
	if fi, _ := os.Stat(path); fi.Size() != boundedtime.Size || fi.Mode() != 0o644 {
		t.Errorf("garbage not replaced: %v", fi)
	}
	if err := os.Mkdir(filepath.Join(dir, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(filepath.Join(dir, "dir"), 0o644, -1); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("Create() over a directory = %v, want refused", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 4 { // shm0, shm0.lock, dir, dir.lock: no temporary file left
		t.Errorf("directory holds %v", entries)
	}
}

// The generation goes odd during a write and even after, and wraps to 2.
func TestGenerationWraps(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "shm0")
	s := newSegment(t, path)
	seen := map[uint16]bool{}
	for range 70_000 {
		s.Write(Record{MaxDriftPPB: 1})
		_, g := s.versionGeneration()
		if g == 0 || g&1 == 1 {
			t.Fatalf("generation after a write = %d, want even and not 0", g)
		}
		seen[g] = true
	}
	if !seen[2] || !seen[65534] {
		t.Errorf("70000 writes did not wrap from 65534 to 2")
	}
	// A writer that died mid-update left an odd generation: the next write
	// enters the update from there and leaves it even.
	s.storeVersionGeneration(boundedtime.Version, 7)
	s.Write(Record{})
	if g := generation(t, path); g != 8 {
		t.Errorf("generation after a write from odd 7 = %d, want 8", g)
	}
}

// Readers in other goroutines (each with its own read-only mapping, as in
// another process) never see a torn record while the writer rewrites it as
// fast as it can.
func TestConcurrentReadersSeeNoTornValue(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "shm0")
	s := newSegment(t, path)
	record := func(k int64) Record {
		return Record{AsOf: time.Duration(k) * 1001, VoidAfter: time.Duration(k)*1001 + VoidAfter, Bound: time.Duration(k),
			DisruptionMarker: uint64(k), MaxDriftPPB: uint32(k % 1e9), Status: boundedtime.Status(k % 4)}
	}
	s.Write(record(1))
	const readers = 2
	target := int64(2_000_000) // reads in all
	if testing.Short() {
		target = 100_000
	}
	var reads, torn atomic.Int64
	var finished atomic.Bool
	writes := int64(1)
	// Readers go on until both the reads and 1,000 writes are done: on a
	// loaded machine the writer may get the CPU for a fraction of the
	// reads' time (10–30 writes in 2,000,000 reads were seen at load 8).
	// A minute at most; the count below then fails the test.
	deadline := time.Now().Add(time.Minute)
	enough := func(n int64) bool {
		return n > target && (atomic.LoadInt64(&writes) >= 1000 || time.Now().After(deadline))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range readers {
		r, err := boundedtime.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		wg.Go(func() {
			var last time.Duration
			for !enough(reads.Add(1)) {
				snap, err := r.Snapshot()
				if err != nil {
					t.Errorf("Snapshot() = %v", err)
					return
				}
				k := int64(snap.Bound)
				want := record(k)
				got := Record{AsOf: snap.AsOf, VoidAfter: snap.VoidAfter, Bound: snap.Bound, DisruptionMarker: snap.DisruptionMarker,
					MaxDriftPPB: snap.MaxDriftPPB, Status: snap.Status}
				if got != want || snap.Bound < last {
					if torn.Add(1) < 5 {
						t.Errorf("torn or out-of-order read: %+v, want %+v (previous bound %d)", got, want, last)
					}
				}
				last = snap.Bound
			}
		})
	}
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for k := int64(2); ; k++ {
			select {
			case <-stop:
				return
			default:
			}
			s.Write(record(k))
			atomic.StoreInt64(&writes, k)
			// Back to back, the writer would keep every read of a slow
			// (-race) reader dirty until it gave up: wait for one read to
			// finish, so writes and reads interleave as fast as both go.
			for seen := reads.Load(); reads.Load() == seen && !finished.Load(); {
			}
		}
	}()
	wg.Wait()
	finished.Store(true)
	close(stop)
	<-writerDone
	t.Logf("%d reads against %d writes, %d torn", min(reads.Load(), target), atomic.LoadInt64(&writes), torn.Load())
	if atomic.LoadInt64(&writes) < 1000 {
		t.Errorf("only %d writes happened during the reads: the test proved little", atomic.LoadInt64(&writes))
	}
}

func inode(t testing.TB, path string) uint64 {
	t.Helper()
	var st syscallStat
	if err := stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}
