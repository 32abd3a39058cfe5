//go:build linux

package clockbound

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/clockwatch/clockwatch/internal/host"
	"github.com/clockwatch/clockwatch/internal/safefile"
	"github.com/clockwatch/clockwatch/stepdown/boundedtime"
)

// Record is what one write puts in the segment.
type Record struct {
	// AsOf is CLOCK_MONOTONIC_COARSE when Bound holds; VoidAfter is when
	// readers must stop trusting the segment at all.
	AsOf, VoidAfter time.Duration
	// Bound is the error bound of CLOCK_REALTIME at AsOf.
	Bound time.Duration
	// DisruptionMarker is the VMClock disruption marker the stepdown state
	// speaks for; DisruptionSupport sets the VMClock flag, which tells
	// readers to compare it with the device's (as ClockBound's daemon does
	// when VMClock is there). Without the flag the marker is 0.
	DisruptionMarker  uint64
	DisruptionSupport bool
	// MaxDriftPPB is how fast readers grow the bound after AsOf.
	MaxDriftPPB uint32
	// Status is the clock status.
	Status boundedtime.Status
}

// Segment is a segment file mapped for writing. Only one goroutine may call
// Write; only one process may write a path (Create takes a lock).
type Segment struct {
	path string
	mem  []byte
	lock *os.File
	// file is the mapped file, kept open to check before every write that
	// it is still the segment's whole file at path (fstat, stat).
	file *os.File
	// mode and gid are Create's, for Recreate.
	mode os.FileMode
	gid  int
	// little is the CPU's byte order: version and generation share the
	// 32-bit word the writer stores atomically.
	little bool
}

// Errors of Write: the segment changed under its mapping. Recreate writes a
// new one.
var (
	// ErrTruncated: the mapped file is no longer Size bytes (a store past
	// its end would raise SIGBUS; one within the page would reach no
	// reader).
	ErrTruncated = errors.New("clockbound segment truncated under its mapping")
	// ErrReplaced: the path no longer names the mapped file (removed, or
	// another file renamed over it): readers would never see the writes.
	ErrReplaced = errors.New("clockbound segment replaced under its mapping")
)

// Create maps the segment at path for writing, with the given permission
// bits and group (gid -1 keeps clockwatch's). A valid segment already there
// (a restarted clockwatch) is reused in place so that its readers carry on;
// anything else is replaced by a fresh one with version and generation 0,
// which readers refuse until the first Write. The directory is created,
// world-traversable, when missing.
func Create(path string, mode os.FileMode, gid int) (*Segment, error) {
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("creating the clockbound segment's directory: %w", err)
		}
		// MkdirAll's mode passes through the umask (systemd's UMask=0077):
		// readers must be able to traverse it.
		if err := os.Chmod(dir, 0o755); err != nil {
			return nil, fmt.Errorf("making the clockbound segment's directory %s traversable: %w", dir, err)
		}
	}
	// A directory that is a link put the segment elsewhere; a dangling
	// lock link created its target.
	if err := safefile.Dir("the clockbound segment's directory", dir); err != nil {
		return nil, err
	}
	lock, err := safefile.OpenFile("the clockbound segment's lock file", path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the clockbound segment's lock file: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("clockbound segment %s: another clockwatch holds %s.lock", path, path)
		}
		return nil, fmt.Errorf("locking %s.lock: %w", path, err)
	}
	var one uint16 = 1
	s := &Segment{path: path, mode: mode, gid: gid, little: *(*byte)(unsafe.Pointer(&one)) == 1}
	if err := s.create(); err != nil {
		lock.Close()
		return nil, err
	}
	s.lock = lock
	return s, nil
}

// create maps the file at s.path, reusing a valid segment or writing a
// fresh one.
func (s *Segment) create() error {
	path, mode, gid := s.path, s.mode, s.gid
	if !reusable(path) {
		if err := fresh(path, mode, gid); err != nil {
			return err
		}
	}
	f, err := safefile.OpenFile("the clockbound segment", path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("opening the clockbound segment: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
		}
	}()
	// The file may have changed between reusable's look and the open.
	if fi, err := f.Stat(); err != nil || fi.Size() != boundedtime.Size {
		return fmt.Errorf("clockbound segment %s: changed while being set up (%v): %w", path, err, ErrTruncated)
	}
	// A reused file keeps readers' mappings: set its mode and group again
	// in case the configuration changed.
	if err := f.Chmod(mode); err != nil {
		return fmt.Errorf("setting the clockbound segment's mode to %04o: %w", mode, err)
	}
	if gid >= 0 {
		if err := f.Chown(-1, gid); err != nil {
			return fmt.Errorf("giving the clockbound segment to gid %d (clockwatch must be a member of the group or have CAP_CHOWN): %w", gid, err)
		}
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, boundedtime.Size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mapping the clockbound segment %s: %w", path, err)
	}
	s.mem, s.file, ok = mem, f, true
	err = s.faultSafe(func() {
		_, gen := s.versionGeneration()
		s.storeVersionGeneration(boundedtime.Version, gen)
	})
	if err != nil {
		s.unmap()
	}
	return err
}

// Recreate maps the segment again after Write failed with ErrTruncated or
// ErrReplaced: a fresh file renamed over the path (or the valid segment now
// there), as at Create. The lock is kept.
func (s *Segment) Recreate() error {
	s.unmap()
	return s.create()
}

// check reports whether the mapped file still has the segment's size: one
// fstat per write (a store past the end of a shorter file faults; one within
// the last page reaches no reader).
func (s *Segment) check() error {
	var st syscall.Stat_t // on the stack: os.FileInfo would allocate
	if err := host.Fstat(int(s.file.Fd()), &st); err != nil {
		return fmt.Errorf("clockbound segment %s: %w", s.path, err)
	}
	if st.Size != boundedtime.Size {
		return fmt.Errorf("clockbound segment %s is %d bytes, not %d: %w", s.path, st.Size, boundedtime.Size, ErrTruncated)
	}
	return nil
}

// Check reports whether the path still names the mapped file (ErrReplaced
// when it was removed or another file renamed over it: readers that open
// the path would never see the writes). A path lookup, so the publisher
// calls it on its periodic rewrite, not on the event path.
func (s *Segment) Check() error {
	if s.file == nil {
		return fmt.Errorf("clockbound segment %s: not mapped: %w", s.path, ErrTruncated)
	}
	// Raw stats (host.Fstat, host.Lstat): this runs on the idle daemon's
	// wake-ups, where the syscall package's calls would also wake the
	// runtime's monitor thread.
	var fd, at syscall.Stat_t
	if err := host.Fstat(int(s.file.Fd()), &fd); err != nil {
		return fmt.Errorf("clockbound segment %s: %w", s.path, err)
	}
	err := host.Lstat(s.path, &at)
	if err != nil || at.Dev != fd.Dev || at.Ino != fd.Ino {
		return fmt.Errorf("clockbound segment %s is no longer the file clockwatch maps (removed or replaced: %v): %w", s.path, err, ErrReplaced)
	}
	return nil
}

// faultSafe runs fn, which loads from and stores to the mapping, with a
// fault turned into ErrTruncated: a store past the end of a truncated file
// raises SIGBUS, which the Go runtime makes a fatal "unexpected fault
// address" unless the goroutine asked for a panic (debug.SetPanicOnFault,
// which applies to the calling goroutine only).
func (s *Segment) faultSafe(fn func()) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(interface{ Addr() uintptr })
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("clockbound segment %s: the mapping faulted at %#x (the file was truncated while mapped): %w", s.path, f.Addr(), ErrTruncated)
		}
	}()
	fn()
	return nil
}

// reusable reports whether path holds a segment of this layout: a regular
// file of Size bytes with the magic, size and version 2.
func reusable(path string) bool {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != boundedtime.Size {
		return false
	}
	b, err := safefile.ReadFile("the clockbound segment", path, boundedtime.Size)
	ne := binary.NativeEndian
	return err == nil && len(b) == boundedtime.Size &&
		ne.Uint32(b[boundedtime.OffMagic:]) == boundedtime.Magic0 && ne.Uint32(b[boundedtime.OffMagic+4:]) == boundedtime.Magic1 &&
		ne.Uint32(b[boundedtime.OffSize:]) == boundedtime.Size && ne.Uint16(b[boundedtime.OffVersion:]) == boundedtime.Version
}

// fresh writes a new segment beside path and renames it over path, so that
// no reader ever maps a file that is being truncated (a read past the end of
// a mapped file faults).
func fresh(path string, mode os.FileMode, gid int) error {
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("clockbound segment %s exists and is not a regular file (%s): refusing to replace it", path, fi.Mode().Type())
	}
	b := make([]byte, boundedtime.Size)
	ne := binary.NativeEndian
	ne.PutUint32(b[boundedtime.OffMagic:], boundedtime.Magic0)
	ne.PutUint32(b[boundedtime.OffMagic+4:], boundedtime.Magic1)
	ne.PutUint32(b[boundedtime.OffSize:], boundedtime.Size)
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("creating the clockbound segment: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename, a no-op
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if err == nil && gid >= 0 {
		if err = tmp.Chown(-1, gid); err != nil {
			err = fmt.Errorf("%w (clockwatch must be a member of the group or have CAP_CHOWN)", err)
		}
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("writing the clockbound segment %s: %w", path, err)
	}
	return nil
}

// Path returns the segment's path.
func (s *Segment) Path() string { return s.path }

func (s *Segment) word(off int) *uint32 { return (*uint32)(unsafe.Pointer(&s.mem[off])) }
func (s *Segment) dword(off int) *int64 { return (*int64)(unsafe.Pointer(&s.mem[off])) }

func (s *Segment) versionGeneration() (version, generation uint16) {
	w := atomic.LoadUint32(s.word(boundedtime.OffVersion))
	if s.little {
		return uint16(w), uint16(w >> 16)
	}
	return uint16(w >> 16), uint16(w)
}

// storeVersionGeneration stores both u16s in one atomic 32-bit store
// (sync/atomic has no 16-bit one; the two share an aligned word).
func (s *Segment) storeVersionGeneration(version, generation uint16) {
	w := uint32(version) | uint32(generation)<<16
	if !s.little {
		w = uint32(version)<<16 | uint32(generation)
	}
	atomic.StoreUint32(s.word(boundedtime.OffVersion), w)
}

// Write updates the segment under the seqlock: the generation goes odd, the
// fields are stored, the generation goes even (wrapping to 2, never 0), as
// ClockBound's ShmWriter::write does. Every store is atomic, so no reader
// sees a field move across the generation's stores. A segment truncated
// under the mapping is an error (ErrTruncated), checked before the stores and
// caught if it happens during them, never a SIGBUS: Recreate then writes a
// new one (and after Check's ErrReplaced).
func (s *Segment) Write(r Record) error {
	if s.mem == nil {
		return fmt.Errorf("clockbound segment %s: not mapped: %w", s.path, ErrTruncated)
	}
	if err := s.check(); err != nil {
		return err
	}
	return s.faultSafe(func() { s.write(r) })
}

func (s *Segment) write(r Record) {
	_, gen := s.versionGeneration()
	if gen&1 == 0 { // odd already: a previous writer died mid-update
		gen++
	}
	s.storeVersionGeneration(boundedtime.Version, gen)
	timespec := func(off int, d time.Duration) {
		atomic.StoreInt64(s.dword(off), int64(d/time.Second))
		atomic.StoreInt64(s.dword(off+8), int64(d%time.Second))
	}
	timespec(boundedtime.OffAsOf, r.AsOf)
	timespec(boundedtime.OffVoidAfter, r.VoidAfter)
	atomic.StoreInt64(s.dword(boundedtime.OffBound), int64(r.Bound))
	atomic.StoreInt64(s.dword(boundedtime.OffDisruptionMarker), int64(r.DisruptionMarker))
	atomic.StoreUint32(s.word(boundedtime.OffMaxDrift), r.MaxDriftPPB)
	atomic.StoreUint32(s.word(boundedtime.OffStatus), uint32(r.Status))
	// The VMClock flag (a u8, then padding) in the first byte of the word.
	var flag uint32
	if r.DisruptionSupport {
		flag = 1
		if !s.little {
			flag = 1 << 24
		}
	}
	atomic.StoreUint32(s.word(boundedtime.OffDisruptionSupport), flag)
	atomic.StoreUint32(s.word(boundedtime.OffDisruptionSupport+4), 0)
	gen++
	if gen == 0 {
		gen = 2
	}
	s.storeVersionGeneration(boundedtime.Version, gen)
}

// Close unmaps the segment and releases the lock. The file stays: readers
// see it age into free running, then unknown, as ClockBound's do when its
// daemon stops, and a restarted clockwatch carries on in the same file.
func (s *Segment) Close() error {
	err := s.unmap()
	if s.lock != nil {
		s.lock.Close()
		s.lock = nil
	}
	return err
}

func (s *Segment) unmap() error {
	var err error
	if s.mem != nil {
		err = syscall.Munmap(s.mem)
		s.mem = nil
	}
	if s.file != nil {
		s.file.Close()
		s.file = nil
	}
	return err
}

// LookupGroup resolves clockbound.group (a name or a numeric gid); "" is -1.
func LookupGroup(name string) (int, error) {
	if name == "" {
		return -1, nil
	}
	if gid, err := strconv.Atoi(name); err == nil && gid >= 0 {
		return gid, nil
	}
	g, err := user.LookupGroup(name)
	if err != nil {
		return 0, fmt.Errorf("clockbound.group: %w", err)
	}
	gid, err := strconv.Atoi(g.Gid)
	if err != nil {
		return 0, fmt.Errorf("clockbound.group: group %s has gid %q: %w", name, g.Gid, err)
	}
	return gid, nil
}
