package timesources

import (
	"fmt"

	"github.com/clockwatch/clockwatch/internal/exporter"
	"github.com/clockwatch/clockwatch/internal/hostclock"
	"github.com/clockwatch/clockwatch/internal/kernel"
	"github.com/clockwatch/clockwatch/internal/timesource"
)

// KernelSource is the name the kernel's readings are filed under.
const KernelSource = "kernel"

// KernelReading is the kernel's discipline state as a normalised reading, a
// fallback: synchronised when disciplined (maxerror under 16 s), its error
// bound maxerror, no offset estimate of its own. err is the adjtimex error.
func KernelReading(t kernel.Timex, err error) timesource.Reading {
	r := timesource.Reading{Source: KernelSource, Role: timesource.Fallback, Found: true}
	if err != nil {
		r.Err = fmt.Errorf("reading adjtimex: %w", err)
		return r
	}
	r.Up, r.HasData = true, true
	r.Synchronized = t.Disciplined()
	r.ErrorBound = t.MaxError
	switch t.LeapPending() {
	case 1:
		r.Leap = timesource.LeapInsert
	case -1:
		r.Leap = timesource.LeapDelete
	}
	r.Detail = fmt.Sprintf("maxerror %v, %s", t.MaxError, t.State)
	if t.Status&kernel.StatusUnsync != 0 {
		r.Detail += ", STA_UNSYNC set"
	}
	return r
}

// Kernel is the kernel as a member: its adjtimex state, read at each
// reading, a fallback whose error bound is judged (KernelReading).
func Kernel(timex hostclock.TimexReader) *Member {
	return &Member{Name: KernelSource, Role: timesource.Fallback,
		Readings: func() []timesource.Reading { return []timesource.Reading{kernelReading(timex)} },
		Updaters: []exporter.Updater{exporter.NewKernelUpdater(timex)}}
}

func kernelReading(timex hostclock.TimexReader) timesource.Reading {
	raw, err := timex.ReadTimex()
	return KernelReading(kernel.Decode(raw), err)
}
