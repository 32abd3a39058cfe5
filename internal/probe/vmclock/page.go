package vmclock

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"time"
)

// The page's layout: struct vmclock_abi of Linux's
// include/uapi/linux/vmclock-abi.h, every field little-endian.
const (
	// Magic is "VCLK" read as a little-endian u32.
	Magic uint32 = 0x4b4c4356
	// Version is the only layout version this package reads.
	Version uint16 = 1
	// MinSize is the structure up to time_maxerror_nanosec: every field
	// this package needs. FullSize adds vm_generation_counter, which older
	// hypervisors leave out.
	MinSize  = 104
	FullSize = 112

	offMagic            = 0
	offSize             = 4
	offVersion          = 8
	offCounterID        = 10
	offTimeType         = 11
	offSeqCount         = 12
	offDisruptionMarker = 16
	offFlags            = 24
	offClockStatus      = 34
	offSmearingHint     = 35
	offTAIOffset        = 36
	offLeapIndicator    = 38
	offPeriodShift      = 39
	offCounterValue     = 40
	offPeriod           = 48
	offPeriodEstError   = 56
	offPeriodMaxError   = 64
	offTimeSec          = 72
	offTimeFrac         = 80
	offTimeEstError     = 88
	offTimeMaxError     = 96
	offVMGeneration     = 104
)

// Flags are the page's flags word (VMCLOCK_FLAG_*).
type Flags uint64

// The flags.
const (
	FlagTAIOffsetValid      Flags = 1 << 0
	FlagDisruptionSoon      Flags = 1 << 1 // a maintenance event in about a day
	FlagDisruptionImminent  Flags = 1 << 2 // a maintenance event in about an hour
	FlagPeriodEstErrorValid Flags = 1 << 3
	FlagPeriodMaxErrorValid Flags = 1 << 4
	FlagTimeEstErrorValid   Flags = 1 << 5
	FlagTimeMaxErrorValid   Flags = 1 << 6
	FlagTimeMonotonic       Flags = 1 << 7
	FlagVMGenCounterPresent Flags = 1 << 8
)

// ClockStatus is the hypervisor's judgement of the time it offers
// (VMCLOCK_STATUS_*).
type ClockStatus uint8

// The clock statuses.
const (
	StatusUnknown      ClockStatus = 0
	StatusInitializing ClockStatus = 1
	StatusSynchronized ClockStatus = 2
	StatusFreeRunning  ClockStatus = 3
	StatusUnreliable   ClockStatus = 4
)

// String names the status as metrics spell it.
func (s ClockStatus) String() string {
	switch s {
	case StatusUnknown:
		return "unknown"
	case StatusInitializing:
		return "initializing"
	case StatusSynchronized:
		return "synchronized"
	case StatusFreeRunning:
		return "free_running"
	case StatusUnreliable:
		return "unreliable"
	}
	return fmt.Sprintf("invalid(%d)", uint8(s))
}

// Statuses lists every status, for metrics that export one series each.
func Statuses() []ClockStatus {
	return []ClockStatus{StatusUnknown, StatusInitializing, StatusSynchronized, StatusFreeRunning, StatusUnreliable}
}

// Leap is the leap indicator (VMCLOCK_LEAP_*).
type Leap uint8

// The leap indicators.
const (
	LeapNone    Leap = 0
	LeapPrePos  Leap = 1 // a positive leap second at the end of the month
	LeapPreNeg  Leap = 2 // a negative one
	LeapPos     Leap = 3 // during 23:59:60
	LeapPostPos Leap = 4
	LeapPostNeg Leap = 5
)

// String names the indicator as metrics spell it.
func (l Leap) String() string {
	switch l {
	case LeapNone:
		return "none"
	case LeapPrePos:
		return "pre_positive"
	case LeapPreNeg:
		return "pre_negative"
	case LeapPos:
		return "positive"
	case LeapPostPos:
		return "post_positive"
	case LeapPostNeg:
		return "post_negative"
	}
	return fmt.Sprintf("invalid(%d)", uint8(l))
}

// Time types (VMCLOCK_TIME_*): what time_sec counts.
const (
	TimeUTC       uint8 = 0
	TimeTAI       uint8 = 1
	TimeMonotonic uint8 = 2
)

// Counter ids (VMCLOCK_COUNTER_*): the CPU counter counter_value is of.
const (
	CounterARMVCNT uint8 = 0
	CounterX86TSC  uint8 = 1
	CounterInvalid uint8 = 0xff
)

// Page is one consistent read of the VMClock page.
type Page struct {
	// Size is the region's size (a page); Version the layout (1).
	Size    uint32
	Version uint16
	// CounterID is the CPU counter the time is tied to (CounterInvalid:
	// none, the page only signals disruptions); TimeType what TimeSec
	// counts.
	CounterID, TimeType uint8
	// SeqCount is the seqlock count of the read (even).
	SeqCount uint32
	// DisruptionMarker changes to a value never used before whenever the
	// counter was disrupted: a live migration, a snapshot restore.
	DisruptionMarker uint64
	Flags            Flags
	ClockStatus      ClockStatus
	SmearingHint     uint8
	// TAIOffset is TAI − UTC, valid with FlagTAIOffsetValid.
	TAIOffset     int16
	LeapIndicator Leap
	// The counter and its period (units of 2^-(64+PeriodShift) s), with
	// the period's error rates.
	PeriodShift                            uint8
	CounterValue, Period                   uint64
	PeriodEstErrorRate, PeriodMaxErrorRate uint64
	// TimeSec and TimeFrac (units of 2^-64 s) are the time at CounterValue.
	TimeSec, TimeFrac uint64
	// TimeEstError and TimeMaxError bound that time, in nanoseconds, valid
	// with their flags.
	TimeEstErrorNS, TimeMaxErrorNS uint64
	// VMGeneration changes when the guest was restored from a snapshot,
	// with FlagVMGenCounterPresent (and a page of FullSize).
	VMGeneration uint64
}

// Errors of Decode.
var (
	// ErrNotVMClock: the bytes are not a VMClock page (magic, size).
	ErrNotVMClock = errors.New("not a VMClock page")
	// ErrVersion: a layout version this package does not read.
	ErrVersion = errors.New("VMClock page version not supported")
	// ErrMalformed: a field holds a value the ABI does not define.
	ErrMalformed = errors.New("VMClock page malformed")
)

// Decode reads a page from b: its first MinSize bytes at least (FullSize
// with the generation counter), as the hypervisor wrote them. It checks
// the magic, the size, the version and that the status, leap indicator and
// time type are values the ABI defines: a hypervisor writing anything else
// is not one this package understands, and nothing it says is used.
func Decode(b []byte) (Page, error) {
	le := binary.LittleEndian
	if len(b) < MinSize {
		return Page{}, fmt.Errorf("%d bytes, want at least %d: %w", len(b), MinSize, ErrNotVMClock)
	}
	if m := le.Uint32(b[offMagic:]); m != Magic {
		return Page{}, fmt.Errorf("magic %#08x, want %#08x (\"VCLK\"): %w", m, Magic, ErrNotVMClock)
	}
	p := Page{
		Size:               le.Uint32(b[offSize:]),
		Version:            le.Uint16(b[offVersion:]),
		CounterID:          b[offCounterID],
		TimeType:           b[offTimeType],
		SeqCount:           le.Uint32(b[offSeqCount:]),
		DisruptionMarker:   le.Uint64(b[offDisruptionMarker:]),
		Flags:              Flags(le.Uint64(b[offFlags:])),
		ClockStatus:        ClockStatus(b[offClockStatus]),
		SmearingHint:       b[offSmearingHint],
		TAIOffset:          int16(le.Uint16(b[offTAIOffset:])),
		LeapIndicator:      Leap(b[offLeapIndicator]),
		PeriodShift:        b[offPeriodShift],
		CounterValue:       le.Uint64(b[offCounterValue:]),
		Period:             le.Uint64(b[offPeriod:]),
		PeriodEstErrorRate: le.Uint64(b[offPeriodEstError:]),
		PeriodMaxErrorRate: le.Uint64(b[offPeriodMaxError:]),
		TimeSec:            le.Uint64(b[offTimeSec:]),
		TimeFrac:           le.Uint64(b[offTimeFrac:]),
		TimeEstErrorNS:     le.Uint64(b[offTimeEstError:]),
		TimeMaxErrorNS:     le.Uint64(b[offTimeMaxError:]),
	}
	if p.Version != Version {
		return Page{}, fmt.Errorf("version %d, this reader reads %d: %w", p.Version, Version, ErrVersion)
	}
	if p.Size < MinSize {
		return Page{}, fmt.Errorf("size %d, want at least %d: %w", p.Size, MinSize, ErrNotVMClock)
	}
	if p.SeqCount&1 != 0 {
		return Page{}, fmt.Errorf("seq_count %d is odd (an update in progress): %w", p.SeqCount, ErrMalformed)
	}
	if p.ClockStatus > StatusUnreliable {
		return Page{}, fmt.Errorf("clock_status %d: %w", p.ClockStatus, ErrMalformed)
	}
	if p.LeapIndicator > LeapPostNeg {
		return Page{}, fmt.Errorf("leap_indicator %d: %w", p.LeapIndicator, ErrMalformed)
	}
	if p.TimeType > TimeMonotonic && p.ClockStatus != StatusUnknown {
		// Smeared time (3, 4) is "not supported" by the ABI: a page that
		// offers it as a time is not to be trusted.
		return Page{}, fmt.Errorf("time_type %d (smeared) with clock_status %s: %w", p.TimeType, p.ClockStatus, ErrMalformed)
	}
	if p.Flags&FlagVMGenCounterPresent != 0 && len(b) >= FullSize && p.Size >= FullSize {
		p.VMGeneration = le.Uint64(b[offVMGeneration:])
	}
	return p, nil
}

// HasTime reports whether the page offers a time: a UTC or TAI time of a
// hypervisor that says its clock is synchronised or free running.
func (p Page) HasTime() bool {
	return (p.TimeType == TimeUTC || p.TimeType == TimeTAI) &&
		(p.ClockStatus == StatusSynchronized || p.ClockStatus == StatusFreeRunning)
}

// Time is the time at CounterValue (not now: reading the counter is the
// reader's part), valid when HasTime. A TAI time is returned as it is.
func (p Page) Time() time.Time {
	// 2^-64 s units to nanoseconds, rounded down.
	ns, _ := bits.Mul64(p.TimeFrac, 1e9)
	return time.Unix(int64(min(p.TimeSec, math.MaxInt64/2)), int64(ns))
}

// MaxError is the time's maximum error, ok with FlagTimeMaxErrorValid.
func (p Page) MaxError() (d time.Duration, ok bool) {
	return nanos(p.TimeMaxErrorNS), p.Flags&FlagTimeMaxErrorValid != 0
}

// EstError is the time's estimated error, ok with FlagTimeEstErrorValid.
func (p Page) EstError() (d time.Duration, ok bool) {
	return nanos(p.TimeEstErrorNS), p.Flags&FlagTimeEstErrorValid != 0
}

// PeriodMaxErrorRatio is the counter period's maximum error relative to
// the period (a frequency error), ok with FlagPeriodMaxErrorValid and a
// period.
func (p Page) PeriodMaxErrorRatio() (r float64, ok bool) {
	if p.Period == 0 {
		return 0, false
	}
	return float64(p.PeriodMaxErrorRate) / float64(p.Period), p.Flags&FlagPeriodMaxErrorValid != 0
}

// PeriodEstErrorRatio is the same for the estimated error.
func (p Page) PeriodEstErrorRatio() (r float64, ok bool) {
	if p.Period == 0 {
		return 0, false
	}
	return float64(p.PeriodEstErrorRate) / float64(p.Period), p.Flags&FlagPeriodEstErrorValid != 0
}

func nanos(ns uint64) time.Duration {
	if ns > math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(ns)
}
