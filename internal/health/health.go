package health

import (
	"fmt"
	"slices"
	"time"

	"github.com/clockwatch/clockwatch/internal/kernel"
	"github.com/clockwatch/clockwatch/internal/timesource"
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
	Kernel    *kernel.Timex
	KernelErr error
	Clocks    *kernel.Sample
	ClocksErr error
	// Sources are the time daemons' and probes' readings, keyed by source
	// (the kernel is Kernel, above): each is judged on its own, and each
	// finding names its source.
	Sources timesource.Set
	// Lines are the sources' rich state for the report, in order.
	Lines []timesource.Line
	// Notes are what the sources' rich data shows (timesource.Noter):
	// warnings are findings, and the report prints them all.
	Notes []timesource.Note
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
func Judge(f Facts, h Thresholds) Verdict {
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
		// daemon that answers speaks for itself below, and then the
		// kernel's figure is no finding (chronyd -x leaves it saturated
		// while its own bound is microseconds), as the daemon's policy
		// has it.
		switch daemon := daemonAnswers(f.Sources); {
		case daemon:
		case k.MaxError >= kernel.MaxErrorSaturated:
			add(Critical, "the kernel's maximum error is saturated at %v: no time daemon has disciplined the clock %s; is chronyd or ntpd running?",
				k.MaxError, undisciplinedSince(f.Clocks))
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
	for _, r := range f.Sources.Sorted() {
		judgeSource(r, h, add)
	}
	for _, n := range f.Notes {
		if n.Warning {
			add(Warning, "%s", n.Text)
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

// daemonAnswers reports whether an authoritative time source answers with a
// time solution: it, not the kernel, then says whether the clock is
// synchronised.
func daemonAnswers(set timesource.Set) bool {
	for _, r := range set {
		if r.Role == timesource.Authoritative && r.Up && r.HasData {
			return true
		}
	}
	return false
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
func undisciplinedSince(s *kernel.Sample) string {
	growth := time.Duration(kernel.MaxErrorSaturated.Seconds() / maxErrorGrowth * float64(time.Second))
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

// ClockReader takes one sample of the kernel's clocks (internal/hostclock's
// SysClocks on a host).
type ClockReader interface {
	ReadClocks(*kernel.Sample) error
}

// TimexReader reads the kernel's discipline state (internal/hostclock's
// SysTimex on a host).
type TimexReader interface {
	ReadTimex() (kernel.RawTimex, error)
}

// Gather reads the local clocks and the kernel state once.
func Gather(clocks ClockReader, timex TimexReader) Facts {
	var f Facts
	var s kernel.Sample
	if err := clocks.ReadClocks(&s); err != nil {
		f.ClocksErr = err
	} else {
		f.Clocks = &s
	}
	if raw, err := timex.ReadTimex(); err != nil {
		f.KernelErr = err
	} else {
		tx := kernel.Decode(raw)
		f.Kernel = &tx
	}
	return f
}

// AddSource adds a source's reading and the lines the report shows for it.
func (f *Facts) AddSource(r timesource.Reading, lines ...timesource.Line) {
	if f.Sources == nil {
		f.Sources = timesource.Set{}
	}
	f.Sources[r.Source] = r
	f.Lines = append(f.Lines, lines...)
}

// judgeSource judges one source's reading by its normalised fields and
// notes. A fallback (the kernel) is judged from its richer Kernel facts.
func judgeSource(r timesource.Reading, h Thresholds, add func(Level, string, ...any)) {
	if r.Role == timesource.Fallback {
		return
	}
	r = r.Usable() // figures that mean nothing are a failed read
	name := r.Source
	if r.IsAbsent() {
		return // looked for and not running here: nothing to say
	}
	h = h.For(name)
	if r.Err != nil {
		add(Warning, "cannot read %s: %v", name, r.Err)
	}
	if !r.Up {
		return
	}
	if !r.HasData {
		// It answers without a time solution: ptp4l with its port
		// LISTENING (no master) or FAULTY.
		if r.Detail != "" {
			add(Warning, "%s is not synchronised: %s", name, r.Detail)
		} else {
			add(Warning, "%s answers but has no time solution", name)
		}
		return
	}
	unsynced := !r.Synchronized || r.Leap == timesource.LeapUnsynchronized
	switch {
	case unsynced && r.Grandmaster != "":
		// PTP: the port state says why (UNCALIBRATED, LISTENING, ...).
		add(Warning, "%s is not synchronised: %s", name, r.Detail)
	case unsynced:
		add(Warning, "%s is not synchronised to any source", name)
	case r.Leap != timesource.LeapNone:
		add(Warning, "%s announces a leap second (%s) at the end of the UTC day", name, r.Leap)
	}
	switch off := r.Offset; {
	case off.Abs() >= h.OffsetCritical:
		add(Critical, "%s estimates this clock is off by %v, above %v", name, off, h.OffsetCritical)
	case off.Abs() >= h.OffsetWarning:
		add(Warning, "%s estimates this clock is off by %v, above %v", name, off, h.OffsetWarning)
	}
	switch b := r.ErrorBound; {
	case unsynced: // the bound of no solution means nothing
	case b >= h.ErrorBoundCritical:
		add(Critical, "%s's error bound (%s) is %v, above %v", name, boundText(r), b, h.ErrorBoundCritical)
	case b >= h.ErrorBoundWarning:
		add(Warning, "%s's error bound (%s) is %v, above %v", name, boundText(r), b, h.ErrorBoundWarning)
	}
}

// boundText says what a source's error bound adds up.
func boundText(r timesource.Reading) string {
	if r.Grandmaster != "" {
		return "|offset| + mean path delay + the grandmaster's accuracy"
	}
	return "|offset| + dispersion + delay/2"
}
