package health

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/clockwatch/clockwatch/config"
	"github.com/clockwatch/clockwatch/probe"
	"github.com/clockwatch/clockwatch/probe/chrony"
)

// Level orders verdicts; its value is the exit code of `clockwatch status`,
// as monitoring plugins use.
type Level int

// The levels, worst last.
const (
	OK       Level = 0
	Warning  Level = 1
	Critical Level = 2
	Unknown  Level = 3
)

func (l Level) String() string {
	switch l {
	case OK:
		return "OK"
	case Warning:
		return "WARNING"
	case Critical:
		return "CRITICAL"
	}
	return "UNKNOWN"
}

// Finding is one reason the verdict is not OK.
type Finding struct {
	Level  Level
	Reason string
}

// Verdict is the overall judgement and its reasons, worst first.
type Verdict struct {
	Level    Level
	Findings []Finding
}

// Facts are what the probes read. A nil field was not read; its error says why.
type Facts struct {
	Kernel    *probe.Timex
	KernelErr error
	Clocks    *probe.Sample
	ClocksErr error
	// Chrony is one poll of chronyd; ChronyErr why it failed. Both nil
	// when chrony is not polled.
	Chrony    *chrony.Data
	ChronyErr error
	// ChronyAudit is what the chrony.conf audit found.
	ChronyAudit []chrony.Finding
	// RecentSteps are clock steps from the event journal, oldest first,
	// with how long ago each happened.
	RecentSteps []RecentStep
}

// RecentStep is a step from the journal.
type RecentStep struct {
	Step time.Duration
	Ago  time.Duration
	Leap bool
}

// Judge decides the verdict.
func Judge(f Facts, h config.Health) Verdict {
	var v Verdict
	add := func(l Level, format string, args ...any) {
		v.Findings = append(v.Findings, Finding{l, fmt.Sprintf(format, args...)})
	}
	if f.ClocksErr != nil {
		add(Unknown, "cannot read the clocks: %v", f.ClocksErr)
	}
	if f.KernelErr != nil {
		add(Unknown, "cannot read the kernel's clock state: %v", f.KernelErr)
	}
	if k := f.Kernel; k != nil {
		// STA_UNSYNC alone says nothing: chronyd clears it only with
		// rtcsync. A disciplined clock has maxerror under 16 s; a time
		// daemon that answers speaks for itself below.
		switch {
		case k.MaxError >= probe.MaxErrorSaturated:
			why := ""
			if f.Chrony == nil {
				why = "; is chronyd or ntpd running?"
			}
			add(Critical, "the kernel's maximum error is saturated at %v: no time daemon has disciplined the clock %s%s",
				k.MaxError, undisciplinedSince(f.Clocks), why)
		case k.MaxError >= h.ErrorBoundCritical:
			add(Critical, "the kernel's maximum error is %v, above %v", k.MaxError, h.ErrorBoundCritical)
		case k.MaxError >= h.ErrorBoundWarning:
			add(Warning, "the kernel's maximum error is %v, above %v", k.MaxError, h.ErrorBoundWarning)
		}
		switch off := k.Offset.Abs(); {
		case off >= h.OffsetCritical:
			add(Critical, "the kernel is still correcting an offset of %v, above %v", k.Offset, h.OffsetCritical)
		case off >= h.OffsetWarning:
			add(Warning, "the kernel is still correcting an offset of %v, above %v", k.Offset, h.OffsetWarning)
		}
		if l := k.LeapPending(); l != 0 {
			add(Warning, "a leap second will be %s at the end of the UTC day", map[int]string{1: "inserted", -1: "deleted"}[l])
		}
	}
	if f.ChronyErr != nil {
		add(Warning, "cannot read chronyd: %v", f.ChronyErr)
	}
	if c := f.Chrony; c != nil {
		tr := c.Tracking
		if tr.Leap == chrony.LeapUnsynchronised {
			add(Warning, "chronyd is not synchronised to any source")
		} else if tr.Leap != chrony.LeapNormal {
			add(Warning, "chronyd announces a leap second (%s) at the end of the UTC day", tr.Leap)
		}
		off := time.Duration(tr.SystemOffset * 1e9)
		switch {
		case off.Abs() >= h.OffsetCritical:
			add(Critical, "chronyd estimates this clock is off by %v, above %v", off, h.OffsetCritical)
		case off.Abs() >= h.OffsetWarning:
			add(Warning, "chronyd estimates this clock is off by %v, above %v", off, h.OffsetWarning)
		}
		bound := time.Duration((math.Abs(tr.SystemOffset) + tr.RootDispersion + tr.RootDelay/2) * 1e9)
		switch {
		case tr.Leap == chrony.LeapUnsynchronised:
		case bound >= h.ErrorBoundCritical:
			add(Critical, "chronyd's error bound (|offset| + dispersion + delay/2) is %v, above %v", bound, h.ErrorBoundCritical)
		case bound >= h.ErrorBoundWarning:
			add(Warning, "chronyd's error bound (|offset| + dispersion + delay/2) is %v, above %v", bound, h.ErrorBoundWarning)
		}
		if len(c.Sources) > 0 && c.SelectableSources() == 0 {
			add(Warning, "chronyd has %d sources and none is selectable", len(c.Sources))
		}
	}
	for _, a := range f.ChronyAudit {
		if a.Warning {
			add(Warning, "%s", a.Text)
		}
	}
	for _, st := range f.RecentSteps {
		kind := "stepped"
		if st.Leap {
			kind = "stepped (leap second)"
		}
		add(Warning, "the wall clock %s by %+.6fs %v ago", kind, st.Step.Seconds(), st.Ago.Round(time.Second))
	}
	for _, fd := range v.Findings {
		if fd.Level > v.Level {
			v.Level = fd.Level
		}
	}
	sortWorstFirst(v.Findings)
	return v
}

// roundUp rounds an uptime for a sentence: to the minute, or under a
// minute to the second.
func roundUp(d time.Duration) time.Duration {
	if d < time.Minute {
		return d.Round(time.Second)
	}
	return d.Round(time.Minute)
}

// maxErrorGrowth is how fast the kernel grows maxerror while nobody
// disciplines the clock (MAXFREQ, 500 µs/s): from a disciplined value it
// takes about 8h53m to saturate.
const maxErrorGrowth = 500e-6

// undisciplinedSince says how long a saturated maxerror means nothing has
// disciplined the clock: the kernel starts at 16 s at boot and when the
// clock is set, so on a host up for less than the growth time it means
// "since boot", not "for hours".
func undisciplinedSince(s *probe.Sample) string {
	growth := time.Duration(probe.MaxErrorSaturated.Seconds() / maxErrorGrowth * float64(time.Second))
	if s != nil && time.Duration(s.Boot) < growth {
		up := time.Duration(s.Boot)
		return fmt.Sprintf("since boot (up %v) or since the clock was last set", roundUp(up))
	}
	return fmt.Sprintf("since boot or since the clock was last set, or not for at least %v", growth.Round(time.Minute))
}

func sortWorstFirst(fs []Finding) {
	slices.SortStableFunc(fs, func(a, b Finding) int { return int(b.Level) - int(a.Level) })
}

// Summary is one line for a status bar (systemd's STATUS=).
func (v Verdict) Summary() string {
	if len(v.Findings) == 0 {
		return v.Level.String() + ": clock healthy"
	}
	s := v.Level.String() + ": " + v.Findings[0].Reason
	if n := len(v.Findings) - 1; n > 0 {
		s += fmt.Sprintf(" (+%d more)", n)
	}
	return s
}

// Gather reads the local clocks and the kernel state once.
func Gather(clocks probe.ClockReader, timex probe.TimexReader) Facts {
	var f Facts
	var s probe.Sample
	if err := clocks.ReadClocks(&s); err != nil {
		f.ClocksErr = err
	} else {
		f.Clocks = &s
	}
	if raw, err := timex.ReadTimex(); err != nil {
		f.KernelErr = err
	} else {
		tx := probe.Decode(raw)
		f.Kernel = &tx
	}
	return f
}

// AddChrony adds what a chrony poller last saw.
func (f *Facts) AddChrony(snap chrony.Snapshot) {
	switch {
	case snap.Up && snap.HaveData:
		d := snap.Data
		f.Chrony = &d
	case snap.Err != nil:
		f.ChronyErr = snap.Err
	}
	if snap.Audit != nil {
		f.ChronyAudit = snap.Audit.Findings()
	}
}
