package boundedtime

// The segment's layout: ClockBound's format version 2, read from
// clock-bound-shm/src/shm_header.rs and lib.rs (ShmHeader, ClockErrorBound;
// both #[repr(C)]). Every field is in the CPU's native byte order. The
// offsets are exported for writers and tools.
const (
	// Magic0 and Magic1 are the magic number, written as two native u32s
	// (on x86-64 the file starts 4e 5a 4d 41 00 02 42 43).
	Magic0 uint32 = 0x414D5A4E
	Magic1 uint32 = 0x43420200
	// Version is the only layout version this package reads and writes.
	Version uint16 = 2
	// Size is the segment's size in bytes: a 16-byte header and the 64-byte
	// clock error bound.
	Size = 80

	// OffMagic holds Magic0 then Magic1 (u32 each).
	OffMagic = 0
	// OffSize holds the segment size (u32).
	OffSize = 8
	// OffVersion holds the layout version (u16); 0 while a writer sets the
	// segment up.
	OffVersion = 12
	// OffGeneration holds the seqlock generation (u16): odd while the
	// writer updates the fields below, even after; it wraps to 2, never 0
	// (0 means never written).
	OffGeneration = 14
	// OffAsOf holds as_of, the CLOCK_MONOTONIC_COARSE time the bound is
	// for (a timespec: i64 seconds, i64 nanoseconds).
	OffAsOf = 16
	// OffVoidAfter holds void_after (a CLOCK_MONOTONIC_COARSE timespec),
	// after which the bound must not be trusted at all.
	OffVoidAfter = 32
	// OffBound holds the error bound at as_of, in nanoseconds (i64).
	OffBound = 48
	// OffDisruptionMarker holds the VMClock disruption marker (u64).
	OffDisruptionMarker = 56
	// OffMaxDrift holds the clock's maximum drift rate in parts per
	// billion (u32): the bound grows by this much per second after as_of.
	OffMaxDrift = 64
	// OffStatus holds the clock status (i32, a Status).
	OffStatus = 68
	// OffDisruptionSupport holds the VMClock flag (u8): 1 when readers must
	// also compare the disruption marker with the VMClock device's.
	OffDisruptionSupport = 72
)

// Status says whether the interval can be trusted. The values are
// ClockBound's.
type Status int32

// The statuses.
const (
	// StatusUnknown: the bound must not be trusted (clockwatch has no time
	// source, or cannot vouch for the clock, or the segment is void).
	StatusUnknown Status = 0
	// StatusSynchronized: a time source keeps the clock within the bound.
	StatusSynchronized Status = 1
	// StatusFreeRunning: no time source has updated the bound lately; it
	// still holds, grown by the maximum drift since.
	StatusFreeRunning Status = 2
	// StatusDisrupted: the clock was stepped, or the machine resumed from
	// suspend: the bound must not be trusted.
	StatusDisrupted Status = 3
)

// String returns the status as metrics and logs spell it.
func (s Status) String() string {
	switch s {
	case StatusUnknown:
		return "unknown"
	case StatusSynchronized:
		return "synchronized"
	case StatusFreeRunning:
		return "free_running"
	case StatusDisrupted:
		return "disrupted"
	}
	return "invalid"
}

// Trusted reports whether an interval with this status bounds true time:
// synchronized or free running.
func (s Status) Trusted() bool { return s == StatusSynchronized || s == StatusFreeRunning }
