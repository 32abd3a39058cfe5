package probe

import "github.com/clockwatch/clockwatch/internal/kernel"

// The kernel's clocks and discipline state are data of package kernel (so
// that the judges need not import this package); these names keep the
// readers' side reading as before.
type (
	Sample     = kernel.Sample
	Timex      = kernel.Timex
	RawTimex   = kernel.RawTimex
	ClockState = kernel.ClockState
)

// MaxErrorSaturated is kernel.MaxErrorSaturated.
const MaxErrorSaturated = kernel.MaxErrorSaturated

// The status bits and clock states of adjtimex(2) (package kernel).
const (
	StatusClk      = kernel.StatusClk
	StatusClockErr = kernel.StatusClockErr
	StatusDelete   = kernel.StatusDelete
	StatusFLL      = kernel.StatusFLL
	StatusFreqHold = kernel.StatusFreqHold
	StatusInsert   = kernel.StatusInsert
	StatusMode     = kernel.StatusMode
	StatusNano     = kernel.StatusNano
	StatusPLL      = kernel.StatusPLL
	StatusPPSErr   = kernel.StatusPPSErr
	StatusPPSFreq  = kernel.StatusPPSFreq
	StatusPPSJit   = kernel.StatusPPSJit
	StatusPPSSig   = kernel.StatusPPSSig
	StatusPPSTime  = kernel.StatusPPSTime
	StatusPPSWand  = kernel.StatusPPSWand
	StatusUnsync   = kernel.StatusUnsync
	TimeDel        = kernel.TimeDel
	TimeError      = kernel.TimeError
	TimeIns        = kernel.TimeIns
	TimeOK         = kernel.TimeOK
	TimeOOP        = kernel.TimeOOP
	TimeWait       = kernel.TimeWait
)

// Decode is kernel.Decode.
func Decode(r RawTimex) Timex { return kernel.Decode(r) }

// FrequencyCorrection is kernel.FrequencyCorrection.
func FrequencyCorrection(prev, cur Sample) (float64, bool) {
	return kernel.FrequencyCorrection(prev, cur)
}

// ClockReader takes one Sample.
type ClockReader interface {
	ReadClocks(*Sample) error
}

// TimexReader reads the kernel's clock discipline state. Implementations
// never change it.
type TimexReader interface {
	ReadTimex() (RawTimex, error)
}
