package vmclock

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"
)

// maxRetries bounds the seqlock loop: a hypervisor that never finishes an
// update must not hang the poller (ClockBound's reader gives up the same way).
const maxRetries = 10_000

// ReadMemory reads one consistent copy of the page in mem, the mapped
// device, under its seqlock: seq_count even and the same before and after
// the copy, every word loaded atomically so that none moves across the two
// loads of seq_count. mem must be 8-byte aligned (a mapped page is) and
// hold at least MinSize bytes.
func ReadMemory(mem []byte) (Page, error) {
	if len(mem) < MinSize {
		return Page{}, fmt.Errorf("%d bytes mapped, want at least %d: %w", len(mem), MinSize, ErrNotVMClock)
	}
	if uintptr(unsafe.Pointer(&mem[0]))%8 != 0 {
		return Page{}, fmt.Errorf("the page is not 8-byte aligned: %w", ErrNotVMClock)
	}
	n := MinSize
	if len(mem) >= FullSize {
		n = FullSize
	}
	var buf [FullSize]byte
	seq := (*uint32)(unsafe.Pointer(&mem[offSeqCount]))
	for i := range maxRetries {
		before := atomic.LoadUint32(seq)
		if before&1 != 0 {
			if i%100 == 99 {
				runtime.Gosched()
			}
			continue
		}
		for off := 0; off < n; off += 8 {
			w := atomic.LoadUint64((*uint64)(unsafe.Pointer(&mem[off])))
			binary.NativeEndian.PutUint64(buf[off:], w)
		}
		if atomic.LoadUint32(seq) == before {
			return Decode(buf[:n])
		}
	}
	return Page{}, fmt.Errorf("no consistent read in %d tries (seq_count stays odd or keeps moving): %w", maxRetries, ErrMalformed)
}
