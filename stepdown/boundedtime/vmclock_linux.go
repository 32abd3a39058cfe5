//go:build linux

package boundedtime

import (
	"encoding/binary"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// DefaultVMClockPath is the VMClock device (Linux 6.13 and later,
// ptp_vmclock), whose disruption marker a segment with the VMClock flag is
// compared with.
const DefaultVMClockPath = "/dev/vmclock0"

// The VMClock page's fields this package reads (Linux's
// include/uapi/linux/vmclock-abi.h, little-endian).
const (
	vmclockMagic     = 0x4b4c4356 // "VCLK"
	vmclockOffSeq    = 12         // seq_count, u32: odd while the hypervisor updates
	vmclockOffMarker = 16         // disruption_marker, u64
	vmclockRetries   = 10_000
	vmclockReopen    = time.Second
)

// vmclockDevice is the VMClock page, mapped read-only on first use.
type vmclockDevice struct {
	path string
	// base is the mapping's first byte, nil until mapped.
	base atomic.Pointer[byte]

	mu     sync.Mutex
	mem    []byte
	failed time.Time
}

// matches reports whether the device's disruption marker is marker: false
// when the device cannot be read.
func (d *vmclockDevice) matches(marker uint64) bool {
	base := d.base.Load()
	if base == nil {
		if base = d.open(); base == nil {
			return false
		}
	}
	m, ok := vmclockMarkerSafe(unsafe.Pointer(base))
	return ok && m == marker
}

// vmclockMarkerSafe is vmclockMarker with a fault (a regular file in the
// device's place, truncated while mapped) a failed read rather than a
// crash; see Reader.snapshot.
func vmclockMarkerSafe(base unsafe.Pointer) (m uint64, ok bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			if _, isFault := p.(interface{ Addr() uintptr }); !isFault {
				panic(p)
			}
			m, ok = 0, false
		}
	}()
	return vmclockMarker(base)
}

// vmclockMarker reads the disruption marker under the page's seqlock.
func vmclockMarker(base unsafe.Pointer) (uint64, bool) {
	seq := (*uint32)(unsafe.Add(base, vmclockOffSeq))
	marker := (*uint64)(unsafe.Add(base, vmclockOffMarker))
	for range vmclockRetries {
		before := atomic.LoadUint32(seq)
		if before&1 != 0 {
			continue
		}
		m := atomic.LoadUint64(marker)
		if atomic.LoadUint32(seq) == before {
			if !littleEndian {
				m = binary.LittleEndian.Uint64(binary.NativeEndian.AppendUint64(nil, m))
			}
			return m, true
		}
	}
	return 0, false
}

var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// open maps the device, at most once a second after a failure.
func (d *vmclockDevice) open() *byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	if b := d.base.Load(); b != nil {
		return b
	}
	if d.path == "" || !d.failed.IsZero() && time.Since(d.failed) < vmclockReopen {
		return nil
	}
	mem, err := mapVMClock(d.path)
	if err != nil {
		d.failed = time.Now()
		return nil
	}
	d.mem = mem
	d.base.Store(&mem[0])
	return &mem[0]
}

// vmclockMinSize is the VMClock page's structure up to time_maxerror_nanosec
// (vmclock-abi.h): a regular file shorter than that is not a page.
const vmclockMinSize = 104

func mapVMClock(path string) ([]byte, error) {
	// O_NONBLOCK: a FIFO in the device's place must not hang Now.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	switch m := fi.Mode(); {
	case m&os.ModeCharDevice != 0: // the device
	case m.IsRegular() && fi.Size() >= vmclockMinSize: // a page saved to a file
	default:
		return nil, syscall.EPROTO
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, os.Getpagesize(), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	// ClockBound's VMClockShmReader::new checks the magic and version 1.
	if !vmclockHeaderSafe(mem) {
		syscall.Munmap(mem)
		return nil, syscall.EPROTO
	}
	return mem, nil
}

func vmclockHeaderSafe(mem []byte) (ok bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			if _, isFault := p.(interface{ Addr() uintptr }); !isFault {
				panic(p)
			}
			ok = false
		}
	}()
	return binary.LittleEndian.Uint32(mem) == vmclockMagic && binary.LittleEndian.Uint16(mem[8:]) == 1
}

func (d *vmclockDevice) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.mem != nil {
		d.base.Store(nil)
		syscall.Munmap(d.mem)
		d.mem = nil
	}
}
