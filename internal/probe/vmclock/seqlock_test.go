package vmclock

import (
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"
)

// aligned returns page bytes in 8-byte aligned memory, as a mapping is.
func aligned(b []byte) []byte {
	words := make([]uint64, (len(b)+7)/8)
	mem := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)[:len(b)]
	copy(mem, b)
	return mem
}

// A writer that updates the marker and the time under the seqlock while
// readers read: every read must see a marker and a time written together
// (the writer keeps time_sec = marker), never a mix. Run with -race: every
// access of both sides is atomic.
func TestReadMemoryUnderConcurrentWrites(t *testing.T) {
	t.Parallel()
	mem := aligned(page())
	word := func(off int) *uint64 { return (*uint64)(unsafe.Pointer(&mem[off])) }
	seq := (*uint32)(unsafe.Pointer(&mem[offSeqCount]))
	atomic.StoreUint64(word(offDisruptionMarker), 0)
	atomic.StoreUint64(word(offTimeSec), 0)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for m := uint64(1); !stop.Load(); m++ {
			atomic.AddUint32(seq, 1) // odd: update in progress
			atomic.StoreUint64(word(offDisruptionMarker), m)
			atomic.StoreUint64(word(offTimeSec), m)
			atomic.AddUint32(seq, 1)
		}
	})
	var last uint64
	for range 20_000 {
		p, err := ReadMemory(mem)
		if err != nil {
			if errors.Is(err, ErrMalformed) {
				continue // the writer kept it busy for maxRetries
			}
			t.Fatal(err)
		}
		if p.TimeSec != p.DisruptionMarker {
			t.Fatalf("torn read: marker %d with time_sec %d", p.DisruptionMarker, p.TimeSec)
		}
		if p.DisruptionMarker < last {
			t.Fatalf("marker went back from %d to %d", last, p.DisruptionMarker)
		}
		last = p.DisruptionMarker
	}
	stop.Store(true)
	wg.Wait()
}

func TestReadMemoryGivesUpOnAStuckUpdate(t *testing.T) {
	t.Parallel()
	mem := aligned(page())
	binary.NativeEndian.PutUint32(mem[offSeqCount:], 11)
	if _, err := ReadMemory(mem); !errors.Is(err, ErrMalformed) {
		t.Errorf("ReadMemory(odd seq_count forever) = %v, want ErrMalformed after its retries", err)
	}
	if _, err := ReadMemory(aligned(page()[:50])); !errors.Is(err, ErrNotVMClock) {
		t.Errorf("ReadMemory(50 bytes) = %v, want ErrNotVMClock", err)
	}
}

func BenchmarkReadMemory(b *testing.B) {
	mem := aligned(page())
	for b.Loop() {
		if _, err := ReadMemory(mem); err != nil {
			b.Fatal(err)
		}
	}
}
