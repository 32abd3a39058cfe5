package kernel

import (
	"fmt"
	"time"
)

// Kernel clock status bits (struct timex.status), from <linux/timex.h>.
const (
	StatusPLL      = 0x0001 // STA_PLL: phase-locked loop updates enabled
	StatusPPSFreq  = 0x0002 // STA_PPSFREQ
	StatusPPSTime  = 0x0004 // STA_PPSTIME
	StatusFLL      = 0x0008 // STA_FLL: frequency-locked loop mode
	StatusInsert   = 0x0010 // STA_INS: insert a leap second at the end of the UTC day
	StatusDelete   = 0x0020 // STA_DEL: delete a leap second at the end of the UTC day
	StatusUnsync   = 0x0040 // STA_UNSYNC: the clock is not synchronised
	StatusFreqHold = 0x0080 // STA_FREQHOLD
	StatusPPSSig   = 0x0100 // STA_PPSSIGNAL
	StatusPPSJit   = 0x0200 // STA_PPSJITTER
	StatusPPSWand  = 0x0400 // STA_PPSWANDER
	StatusPPSErr   = 0x0800 // STA_PPSERROR
	StatusClockErr = 0x1000 // STA_CLOCKERR
	StatusNano     = 0x2000 // STA_NANO: offset is in nanoseconds, not microseconds
	StatusMode     = 0x4000 // STA_MODE
	StatusClk      = 0x8000 // STA_CLK
)

// ClockState is what adjtimex returns: the kernel's leap second state machine.
type ClockState int

// The clock states of adjtimex(2).
const (
	TimeOK    ClockState = 0 // TIME_OK: no leap second pending
	TimeIns   ClockState = 1 // TIME_INS: a leap second will be inserted
	TimeDel   ClockState = 2 // TIME_DEL: a leap second will be deleted
	TimeOOP   ClockState = 3 // TIME_OOP: the leap second is in progress
	TimeWait  ClockState = 4 // TIME_WAIT: a leap second has just occurred
	TimeError ClockState = 5 // TIME_ERROR: the clock is not synchronised
)

func (s ClockState) String() string {
	switch s {
	case TimeOK:
		return "TIME_OK"
	case TimeIns:
		return "TIME_INS"
	case TimeDel:
		return "TIME_DEL"
	case TimeOOP:
		return "TIME_OOP"
	case TimeWait:
		return "TIME_WAIT"
	case TimeError:
		return "TIME_ERROR"
	}
	return fmt.Sprintf("TIME_UNKNOWN(%d)", int(s))
}

// maxPhase is the kernel's MAXPHASE: the PLL never holds a larger offset
// (ntp_update_offset clamps to it). A larger value read back is an artifact,
// such as the transient 2^32 ns offset seen on KVM guests.
const maxPhase = 500 * time.Millisecond

// scaledPPM is the unit of freq and tolerance: parts per million with a
// 16-bit binary fraction.
const scaledPPM = 65536 * 1e6

// RawTimex holds the fields of struct timex clockwatch reads, in the kernel's
// units, so that decoding them is a pure function tested on any platform.
type RawTimex struct {
	Offset    int64 // µs, or ns with STA_NANO
	Freq      int64 // scaled ppm
	MaxError  int64 // µs
	EstError  int64 // µs
	Status    int32
	Constant  int64
	Precision int64 // µs
	Tolerance int64 // scaled ppm
	Tick      int64 // µs
	TAI       int32 // s
	State     int   // adjtimex's return value
}

// Timex is the kernel's clock discipline state in base units.
type Timex struct {
	// Offset is the remaining phase offset the kernel PLL is correcting.
	Offset time.Duration
	// Frequency is the frequency adjustment the kernel applies, as a ratio.
	Frequency float64
	// MaxError is the kernel's maximum error bound; it grows by 500 µs a
	// second while no daemon updates it, and saturates at 16 s.
	MaxError time.Duration
	// EstError is the estimated error set by the time daemon.
	EstError time.Duration
	// Status is the STA_* bit set.
	Status uint32
	// Constant is the PLL time constant.
	Constant int64
	// Precision is the clock's precision.
	Precision time.Duration
	// Tolerance is the largest frequency error the kernel accepts, as a ratio.
	Tolerance float64
	// Tick is the length of a clock tick.
	Tick time.Duration
	// TAI is the TAI−UTC offset the kernel was told.
	TAI time.Duration
	// State is the leap second state machine's state.
	State ClockState
	// Artifact is set when Offset was read back impossibly large and was
	// zeroed rather than reported; callers count these.
	Artifact bool
}

// MaxErrorSaturated is the value at which the kernel stops growing maxerror:
// 16 s (NTP_PHASE_LIMIT), meaning nobody has disciplined the clock for hours.
const MaxErrorSaturated = 16 * time.Second

// Decode converts adjtimex's raw values to base units, filtering impossible
// offsets.
func Decode(r RawTimex) Timex {
	t := Timex{
		Frequency: float64(r.Freq) / scaledPPM,
		MaxError:  time.Duration(r.MaxError) * time.Microsecond,
		EstError:  time.Duration(r.EstError) * time.Microsecond,
		Status:    uint32(r.Status),
		Constant:  r.Constant,
		Precision: time.Duration(r.Precision) * time.Microsecond,
		Tolerance: float64(r.Tolerance) / scaledPPM,
		Tick:      time.Duration(r.Tick) * time.Microsecond,
		TAI:       time.Duration(r.TAI) * time.Second,
		State:     ClockState(r.State),
	}
	t.Offset = time.Duration(r.Offset)
	if t.Status&StatusNano == 0 {
		t.Offset *= time.Microsecond
	}
	if t.Offset > maxPhase || t.Offset < -maxPhase {
		t.Offset, t.Artifact = 0, true
	}
	return t
}

// Synchronized reports whether the kernel considers the clock synchronised:
// STA_UNSYNC clear and the state not TIME_ERROR.
func (t Timex) Synchronized() bool {
	return t.Status&StatusUnsync == 0 && t.State != TimeError
}

// LeapPending is +1 when a leap second will be inserted at the end of the
// UTC day, -1 when one will be deleted, and 0 otherwise.
func (t Timex) LeapPending() int {
	switch {
	case t.Status&StatusInsert != 0:
		return 1
	case t.Status&StatusDelete != 0:
		return -1
	}
	return 0
}

// Disciplined reports whether a time daemon has disciplined the clock
// recently: maxerror below its 16 s saturation. This, not STA_UNSYNC, says
// whether the kernel's clock is synchronised: chronyd on Linux clears
// STA_UNSYNC only with rtcsync, while it keeps maxerror small whenever it
// disciplines the clock (node_exporter's mixin and systemd judge the same
// way). adjtimex also returns TIME_ERROR whenever STA_UNSYNC is set, so the state
// says nothing more.
func (t Timex) Disciplined() bool { return t.MaxError < MaxErrorSaturated }
