//go:build linux

package boundedtime

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// DefaultPath is where clockwatch writes its segment unless configured.
// (ClockBound's own daemon writes /var/run/clockbound/shm0.)
const DefaultPath = "/run/clockwatch/clockbound/shm0"

// maxRetries bounds the seqlock loop, as ClockBound's reader does: a writer
// that died mid-update must not hang its readers.
const maxRetries = 1_000_000

// Reader reads a segment. It is safe for concurrent use; Close must not be
// called while another goroutine is in a method.
type Reader struct {
	path string
	mem  []byte
	// base is &mem[0]: field reads skip the slice's bounds checks (mem is
	// checked to hold Size bytes once, in newReader).
	base unsafe.Pointer
	// unmap releases mem; nil for memory the Reader does not own (tests).
	unmap func([]byte) error
	// t0 and mono0 tie time.Now's monotonic reading (relative to process
	// start) to the kernel's CLOCK_MONOTONIC: mono0 was read just after
	// t0, so mono0 + t.Sub(t0) is never below the true CLOCK_MONOTONIC
	// (and CLOCK_MONOTONIC_COARSE is never above that): a reader that runs
	// ahead only grows the bound and ages the segment sooner.
	t0    time.Time
	mono0 time.Duration
	// last is the last consistent snapshot, returned while the writer is
	// mid-update or restarting (as ClockBound's reader does).
	last atomic.Pointer[Snapshot]
	// little is the CPU's byte order, for the flag byte.
	little bool
	// vmclock is the VMClock device, mapped the first time a snapshot has
	// the VMClock flag (as ClockBound's client maps it).
	vmclock vmclockDevice
}

// Open maps the segment at path (DefaultPath if empty) read-only and checks
// it as ClockBound's reader does: at least 80 bytes, the magic, a version
// and generation other than 0, version 2, a size of 80 or more, and one
// consistent read.
//
// When the segment has the VMClock flag (clockwatch found /dev/vmclock0),
// Now also reads the device's disruption marker and reports StatusUnknown
// while it differs from the segment's: the VM was migrated or restored and
// clockwatch has not said so yet. Open uses DefaultVMClockPath; see
// OpenVMClock.
func Open(path string) (*Reader, error) { return OpenVMClock(path, DefaultVMClockPath) }

// OpenVMClock is Open with the VMClock device at vmclockPath, as ClockBound's
// VMClock::new takes both paths. The device is mapped when a snapshot first
// has the VMClock flag; if it cannot be, Now reports StatusUnknown (and
// tries again at most once a second).
func OpenVMClock(path, vmclockPath string) (*Reader, error) {
	if path == "" {
		path = DefaultPath
	}
	// O_NONBLOCK: a FIFO in the segment's place must not hang the open;
	// it is refused below.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the bounded-time segment: %w (is clockwatch running with clockbound.enabled?)", err)
	}
	defer f.Close() // the mapping outlives the descriptor
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("bounded-time segment %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("bounded-time segment %s is not a regular file (%s): %w", path, fi.Mode().Type(), ErrNotInitialized)
	}
	if fi.Size() < Size {
		// Mapping past the end of the file would fault on first read.
		return nil, fmt.Errorf("bounded-time segment %s is %d bytes, want at least %d: %w", path, fi.Size(), Size, ErrNotInitialized)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, Size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping the bounded-time segment %s: %w", path, err)
	}
	t0 := time.Now()
	mono, err := monotonic() // after t0, not before: see Reader.mono0
	if err != nil {
		syscall.Munmap(mem)
		return nil, fmt.Errorf("reading CLOCK_MONOTONIC: %w", err)
	}
	r, err := newReader(path, mem, t0, mono)
	if err != nil {
		syscall.Munmap(mem)
		return nil, err
	}
	r.unmap = syscall.Munmap
	r.vmclock.path = vmclockPath
	return r, nil
}

// newReader checks the header of mem (at least Size bytes, 8-byte aligned)
// and takes a first snapshot.
func newReader(path string, mem []byte, t0 time.Time, mono0 time.Duration) (*Reader, error) {
	var one uint16 = 1
	if len(mem) < Size {
		return nil, fmt.Errorf("bounded-time segment %s: %d bytes mapped, want %d: %w", path, len(mem), Size, ErrNotInitialized)
	}
	r := &Reader{path: path, mem: mem, base: unsafe.Pointer(&mem[0]), t0: t0, mono0: mono0, little: *(*byte)(unsafe.Pointer(&one)) == 1}
	if err := r.checkHeaderSafe(); err != nil {
		return nil, fmt.Errorf("bounded-time segment %s: %w", path, err)
	}
	if _, err := r.Snapshot(); err != nil {
		return nil, fmt.Errorf("bounded-time segment %s: %w", path, err)
	}
	return r, nil
}

// Path returns the segment's path.
func (r *Reader) Path() string { return r.path }

// Close unmaps the segment.
func (r *Reader) Close() error {
	r.vmclock.close()
	if r.unmap == nil || r.mem == nil {
		return nil
	}
	err := r.unmap(r.mem)
	r.mem, r.base = nil, nil
	return err
}

func (r *Reader) u32(off uintptr) uint32 {
	return atomic.LoadUint32((*uint32)(unsafe.Add(r.base, off)))
}
func (r *Reader) i64(off uintptr) int64 { return atomic.LoadInt64((*int64)(unsafe.Add(r.base, off))) }

// versionGeneration reads the version and the generation in one atomic load
// (sync/atomic has no 16-bit load; they share an aligned 32-bit word).
func (r *Reader) versionGeneration() (version, generation uint16) {
	w := r.u32(OffVersion)
	if r.little {
		return uint16(w), uint16(w >> 16)
	}
	return uint16(w >> 16), uint16(w)
}

// checkHeaderSafe is checkHeader with a fault (a truncated file) an error.
func (r *Reader) checkHeaderSafe() (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			if _, ok := p.(interface{ Addr() uintptr }); !ok {
				panic(p)
			}
			err = ErrTruncated
		}
	}()
	return r.checkHeader()
}

// checkHeader is ClockBound's ShmHeader::is_valid and the size check of
// ShmReader::new, in their order.
func (r *Reader) checkHeader() error {
	if r.u32(OffMagic) != Magic0 || r.u32(OffMagic+4) != Magic1 {
		return fmt.Errorf("magic %#08x %#08x, want %#08x %#08x: %w", r.u32(OffMagic), r.u32(OffMagic+4), Magic0, Magic1, ErrNotInitialized)
	}
	version, generation := r.versionGeneration()
	if version == 0 {
		return fmt.Errorf("version 0 (the writer has not set it up): %w", ErrNotInitialized)
	}
	if generation == 0 {
		return fmt.Errorf("generation 0 (never written): %w", ErrNotInitialized)
	}
	if version != Version {
		return fmt.Errorf("version %d, this reader reads %d: %w", version, Version, ErrVersion)
	}
	if size := r.u32(OffSize); size < Size {
		return fmt.Errorf("size %d, want at least %d: %w", size, Size, ErrMalformed)
	}
	return nil
}

// Snapshot returns a consistent read of the segment: ClockBound's
// ShmReader::snapshot. While the writer is mid-update (odd generation) or
// setting the segment up again (version or generation 0) it returns the
// last snapshot, which ages into free running if the writer never finishes.
func (r *Reader) Snapshot() (Snapshot, error) {
	var s Snapshot
	err := r.snapshot(&s)
	return s, err
}

// snapshot fills s in place: Now's path copies nothing it need not. A
// segment truncated under the mapping makes its loads fault (SIGBUS), which
// the Go runtime makes fatal unless the goroutine asked for a panic:
// snapshot asks for one around the loads (debug.SetPanicOnFault, which
// applies to the calling goroutine only and costs no system call) and
// returns ErrTruncated.
func (r *Reader) snapshot(s *Snapshot) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			if _, ok := p.(interface{ Addr() uintptr }); !ok {
				panic(p)
			}
			err = ErrTruncated
		}
	}()
	return r.load(s)
}

func (r *Reader) load(s *Snapshot) error {
	version, gen := r.versionGeneration()
	if version != 0 && version != Version {
		return ErrVersion
	}
	if version == 0 || gen == 0 || gen&1 == 1 {
		return r.lastOr(s)
	}
	for range maxRetries {
		r.read(s)
		_, again := r.versionGeneration()
		if again == gen {
			s.Generation = gen
			if s.Malformed() {
				return ErrMalformed
			}
			if last := r.last.Load(); last == nil || last.Generation != gen {
				c := *s // a copy, so that only this branch allocates (once per write, not per read)
				r.last.Store(&c)
			}
			return nil
		}
		if again&1 == 0 {
			gen = again
		}
	}
	return ErrNotInitialized
}

func (r *Reader) lastOr(s *Snapshot) error {
	if last := r.last.Load(); last != nil {
		*s = *last
		return nil
	}
	return ErrNotInitialized
}

// read loads the fields after the header, each with an atomic load so that
// none is reordered past the generation's second read.
func (r *Reader) read(s *Snapshot) {
	flag := r.u32(OffDisruptionSupport)
	if !r.little {
		flag >>= 24
	}
	s.AsOf = timespec(r.i64(OffAsOf), r.i64(OffAsOf+8))
	s.VoidAfter = timespec(r.i64(OffVoidAfter), r.i64(OffVoidAfter+8))
	s.Bound = time.Duration(r.i64(OffBound))
	s.DisruptionMarker = uint64(r.i64(OffDisruptionMarker))
	s.MaxDriftPPB = r.u32(OffMaxDrift)
	s.Status = Status(int32(r.u32(OffStatus)))
	s.DisruptionSupport = flag&0xff != 0
}

// invalidTimespec marks a timestamp out of range; Malformed reports it.
const invalidTimespec = time.Duration(-1 << 63)

func timespec(sec, nsec int64) time.Duration {
	if sec < 0 || sec >= maxTimespecSec || nsec < 0 || nsec >= 1e9 {
		return invalidTimespec
	}
	return time.Duration(sec)*time.Second + time.Duration(nsec)
}

// Malformed reports a timestamp outside [0, 2^33 s) or a nanosecond field
// outside [0, 1e9): stricter than ClockBound, which would compute with it.
func (s Snapshot) Malformed() bool {
	return s.AsOf == invalidTimespec || s.VoidAfter == invalidTimespec
}

// Now returns the interval [earliest, latest] that contains true time now,
// and whether it can be trusted (Status.Trusted). It makes no system call
// and does not allocate. earliest and latest carry no monotonic reading, so
// comparing them with other times compares wall clocks.
func (r *Reader) Now() (earliest, latest time.Time, status Status, err error) {
	// The snapshot first, then the clocks, as ClockBound's client does
	// (snapshot, then now): clocks read before the snapshot could be older
	// than a record written in between, a false causality breach (seen
	// under load in the VM).
	var s Snapshot
	if err := r.snapshot(&s); err != nil {
		return time.Time{}, time.Time{}, StatusUnknown, err
	}
	real := time.Now() // CLOCK_REALTIME, then CLOCK_MONOTONIC
	mono := r.mono0 + real.Sub(r.t0)
	bound, status, err := s.bound(mono)
	if err != nil {
		return time.Time{}, time.Time{}, StatusUnknown, err
	}
	if s.DisruptionSupport && !r.vmclock.matches(s.DisruptionMarker) {
		status = StatusUnknown
	}
	return interval(real, bound, status)
}

// NowNanos is Now in nanoseconds since the Unix epoch, for callers that
// compare integers: the same snapshot, clocks and checks (the VMClock
// marker included), without building two time.Time values.
func (r *Reader) NowNanos() (earliest, latest int64, status Status, err error) {
	var s Snapshot
	if err := r.snapshot(&s); err != nil {
		return 0, 0, StatusUnknown, err
	}
	real := time.Now()
	mono := r.mono0 + real.Sub(r.t0)
	bound, status, err := s.bound(mono)
	if err != nil {
		return 0, 0, StatusUnknown, err
	}
	if s.DisruptionSupport && !r.vmclock.matches(s.DisruptionMarker) {
		status = StatusUnknown
	}
	ns := real.UnixNano()
	return ns - int64(bound), ns + int64(bound), status, nil
}

// SurelyBefore reports whether deadline is surely still in the future: the
// status is trusted and the latest time true time can be is before
// deadline. A lease that expires at deadline is still held while it
// returns true. Any error or untrusted status returns false with the reason.
func (r *Reader) SurelyBefore(deadline time.Time) (bool, error) {
	_, latest, err := r.trustedNow()
	if err != nil {
		return false, err
	}
	return latest.Before(deadline.Round(0)), nil
}

// SurelyAfter reports whether t is surely in the past: the status is trusted
// and the earliest time true time can be is after t.
func (r *Reader) SurelyAfter(t time.Time) (bool, error) {
	earliest, _, err := r.trustedNow()
	if err != nil {
		return false, err
	}
	return earliest.After(t.Round(0)), nil
}

// trustedNow is Now for the Surely questions: the interval true time is in,
// or Now's error, or an *UntrustedError when the status is not trusted.
func (r *Reader) trustedNow() (earliest, latest time.Time, err error) {
	earliest, latest, status, err := r.Now()
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	if !status.Trusted() {
		return time.Time{}, time.Time{}, &UntrustedError{Status: status}
	}
	return earliest, latest, nil
}

// UntrustedError says the segment's status does not allow a promise.
type UntrustedError struct{ Status Status }

func (e *UntrustedError) Error() string {
	return "bounded time cannot be trusted: clock status " + e.Status.String()
}

// IsUntrusted reports whether err is an UntrustedError.
func IsUntrusted(err error) bool {
	var u *UntrustedError
	return errors.As(err, &u)
}

// monotonic reads CLOCK_MONOTONIC with a system call (the standard library
// offers none; time.Now's reading is relative to process start).
func monotonic() (time.Duration, error) {
	var ts syscall.Timespec
	const clockMonotonic = 1
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0, e
	}
	return time.Duration(ts.Sec)*time.Second + time.Duration(ts.Nsec), nil
}
