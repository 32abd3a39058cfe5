package probe

import (
	"fmt"

	"github.com/clockwatch/clockwatch/internal/timesource"
)

// KernelSource is the name the kernel's readings are filed under.
const KernelSource = "kernel"

// Disciplined reports whether a time daemon has disciplined the clock
// recently: maxerror below its 16 s saturation. This, not STA_UNSYNC, says
// whether the kernel's clock is synchronised: chronyd on Linux clears
// STA_UNSYNC only with rtcsync, while it keeps maxerror small whenever it
// disciplines the clock (node_exporter's mixin and systemd judge the same
// way). adjtimex also returns TIME_ERROR whenever STA_UNSYNC is set, so the state
// says nothing more.
func (t Timex) Disciplined() bool { return t.MaxError < MaxErrorSaturated }

// KernelReading is the kernel's discipline state as a normalised reading, a
// fallback: synchronised when disciplined (maxerror under 16 s), its error
// bound maxerror, no offset estimate of its own. err is the adjtimex error.
func KernelReading(t Timex, err error) timesource.Reading {
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
	if t.Status&StatusUnsync != 0 {
		r.Detail += ", STA_UNSYNC set"
	}
	return r
}
