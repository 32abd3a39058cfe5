package step

import (
	"time"

	"github.com/clockwatch/clockwatch/internal/kernel"
)

// State is what a Detector carries across restarts: the journal persists it
// so that the epoch and the sequence never go back.
type State struct {
	// Epoch counts wall-clock discontinuities.
	Epoch uint64 `json:"epoch"`
	// Seq is the sequence number of the last event.
	Seq uint64 `json:"seq"`
	// Gap is REALTIME−BOOTTIME (ns) measured at BOOTTIME GapBoot by a
	// previous run in this boot; GapBoot 0 means none. The first sample is
	// compared with it, so a step made while clockwatch was not running is
	// reported (SeenRestart).
	Gap     int64 `json:"gap_ns,omitempty"`
	GapBoot int64 `json:"gap_boot_ns,omitempty"`
}

// Stats counts what a Detector has seen, for logs and metrics.
type Stats struct {
	// Samples is the number of samples observed.
	Samples uint64
	// Rejected counts samples whose MONOTONIC time did not move forward;
	// they are ignored.
	Rejected uint64
	// Marks counts clock-set marks received.
	Marks uint64
	// LateMarks counts marks that arrived after a sample later than the mark
	// had already been observed: sampling had seen their step first.
	LateMarks uint64
	// ResumeMarks counts marks folded into the resume just before them: the
	// kernel cancels CANCEL_ON_SET timers on resume from a work item, so the
	// mark may come after the sample that saw the resume.
	ResumeMarks uint64
	// Steps, ClockSets and Resumes count the events of each type.
	Steps, ClockSets, Resumes uint64
}

// Slew is the measured rate of change of the REALTIME−BOOTTIME gap.
type Slew struct {
	// Rate is the change of the gap per unit of monotonic time, as a ratio
	// (1e-6 is 1 ppm), over the last complete slew window without a step.
	Rate float64
	// Valid is false until a whole window has been measured.
	Valid bool
}

// maxEvents is how many events one Observe can return: a resume, then a step
// or a clock-set note.
const maxEvents = 2

// resumeMarkWindow is how long after the sample that saw a resume a
// clock-set mark with no change of its own is taken to be the resume's. The
// kernel sends it from a work item queued on resume: about 15 ms later on a
// real machine, more under load or in a VM. A set with a measurable step in
// the window is still a step; only a bare clock-set note is folded.
const resumeMarkWindow = 2 * time.Second

// Detector turns a sequence of samples and clock-set marks into events. It is
// not safe for concurrent use: one goroutine (the Sampler) owns it.
type Detector struct {
	cfg   Config
	state State
	stats Stats

	prev     kernel.Sample
	havePrev bool

	// Pending clock-set marks not yet matched with a sample.
	marks    int
	markMono int64

	// The last step, to attribute a late mark to it.
	lastStepPrevMono int64
	lastStepMono     int64
	lastStepMarked   bool
	haveLastStep     bool

	// The interval of the last resume, to fold its late marks into it.
	lastResumePrevMono int64
	lastResumeMono     int64
	haveLastResume     bool

	// The last interval's slew, used to take a running slew out of a step's
	// size, and the reference sample of the slew-rate window.
	lastRate      float64
	lastRateValid bool
	refMono       int64
	refGap        int64
	slew          Slew

	out [maxEvents]Event
}

// NewDetector returns a Detector starting from a persisted state (the zero
// State on first run). cfg must have passed Validate.
func NewDetector(cfg Config, state State) *Detector {
	return &Detector{cfg: cfg, state: state}
}

// State returns the epoch and the last sequence number.
func (d *Detector) State() State { return d.state }

// Stats returns the counters.
func (d *Detector) Stats() Stats { return d.stats }

// Slew returns the slew rate of the gap.
func (d *Detector) Slew() Slew { return d.slew }

// Last returns the last sample observed, and false before the first.
func (d *Detector) Last() (kernel.Sample, bool) { return d.prev, d.havePrev }

// ClockSet records a clock-set mark: the kernel said, at monotonic time
// monoNs, that the wall clock was set. The caller takes a fresh sample right
// after and passes it to Observe, which decides what the mark meant.
func (d *Detector) ClockSet(monoNs int64) {
	d.stats.Marks++
	if d.havePrev && monoNs <= d.prev.Mono {
		// A sample taken after this mark was observed already. If sampling
		// reported a step in the interval that holds the mark (or just
		// before, as the watcher may wake late), the mark was that step's:
		// nothing more to say.
		d.stats.LateMarks++
		if d.haveLastStep && !d.lastStepMarked && monoNs > d.lastStepPrevMono &&
			monoNs <= d.lastStepMono+int64(d.cfg.Interval) {
			d.lastStepMarked = true
			return
		}
		if d.resumeExplains(monoNs) {
			d.stats.ResumeMarks++
			return
		}
		// Otherwise it stays pending and the next sample decides.
		monoNs = d.prev.Mono + 1
	}
	if d.marks == 0 || monoNs < d.markMono {
		d.markMono = monoNs
	}
	d.marks++
}

// Observe compares a sample with the previous one and returns the events it
// reveals, or nil. The returned slice is reused by the next call: copy what
// must be kept. Observe does not allocate.
func (d *Detector) Observe(cur kernel.Sample) []Event {
	if !d.havePrev {
		d.havePrev = true
		d.prev = cur
		d.stats.Samples++
		// Marks before the first sample precede the baseline: nothing to
		// compare them with.
		d.marks = 0
		d.resetSlewRef(cur)
		return d.sinceLastRun(cur)
	}
	prev := d.prev
	if cur.Mono <= prev.Mono {
		d.stats.Rejected++
		return nil
	}
	d.stats.Samples++
	d.prev = cur

	dMono := cur.Mono - prev.Mono
	//clockwatch:wallclock-ok gap is REALTIME minus BOOTTIME, an offset between two clocks: its change is the step being measured
	dGap := gap(cur) - gap(prev)
	noise := prev.Window + cur.Window + int64(d.cfg.MinStep)
	slack := int64(d.cfg.MaxSlewRate * float64(dMono))

	marked := d.marks > 0 && d.markMono <= cur.Mono
	markMono := d.markMono
	if marked {
		d.marks = 0
	}

	// The slew of the previous interval, if one was measurable, continued
	// through this one: take it out of the size.
	size := dGap
	if d.lastRateValid {
		size -= int64(d.lastRate * float64(dMono))
	}
	sampled := abs(dGap) > noise+slack
	isStep := sampled || (marked && abs(size) > noise)

	n := 0
	explained := false
	if dSusp := suspended(cur) - suspended(prev); dSusp > noise {
		d.stats.Resumes++
		d.state.Seq++
		e := d.newEvent(TypeWake, prev, cur, marked, true, markMono)
		e.Suspended = time.Duration(dSusp)
		d.out[n] = e
		n++
		explained = true
		d.haveLastResume, d.lastResumePrevMono, d.lastResumeMono = true, prev.Mono, cur.Mono
	}

	switch {
	case isStep:
		d.stats.Steps++
		d.state.Epoch = nextEpoch(d.state.Epoch)
		d.state.Seq++
		e := d.newEvent(TypeStep, prev, cur, marked, sampled, markMono)
		e.Step = time.Duration(size)
		e.WallBefore = time.Unix(0, cur.Real-size)
		e.Leap = isLeap(prev, cur, dGap, noise)
		d.out[n] = e
		n++
		d.state.Gap, d.state.GapBoot = gap(cur), cur.Boot
		d.haveLastStep = true
		d.lastStepPrevMono = prev.Mono
		d.lastStepMono = cur.Mono
		d.lastStepMarked = marked
		d.resetSlewRef(cur)
	case marked && !explained && d.haveLastStep && !d.lastStepMarked && markMono <= d.lastStepMono+int64(d.cfg.Interval):
		// A mark with no change of its own, read just after the sample
		// that caught a step: the watcher woke after the sampler (seen in
		// a VM, where the timer interrupt and the tick race). The mark was
		// that step's.
		d.stats.LateMarks++
		d.lastStepMarked = true
	case marked && !explained && d.resumeExplains(markMono):
		// The resume's own mark, after the sample that saw the resume.
		d.stats.ResumeMarks++
	case marked && !explained:
		d.stats.ClockSets++
		d.state.Seq++
		e := d.newEvent(TypeClockSet, prev, cur, true, false, markMono)
		e.Step = time.Duration(dGap)
		d.out[n] = e
		n++
	}
	if !isStep {
		d.trackSlew(cur, dGap, dMono, noise)
	}
	if n == 0 {
		return nil
	}
	return d.out[:n]
}

// resumeExplains reports whether a clock-set mark at monoNs, with no change
// of its own, belongs to the last resume: it falls in the interval that saw
// the resume or within resumeMarkWindow after it.
func (d *Detector) resumeExplains(monoNs int64) bool {
	return d.haveLastResume && monoNs > d.lastResumePrevMono && monoNs <= d.lastResumeMono+int64(resumeMarkWindow)
}

// sinceLastRun compares the first sample with the gap a previous run
// persisted in this boot. The allowance grows with the BOOTTIME elapsed, as
// nobody watched the clock meanwhile.
func (d *Detector) sinceLastRun(cur kernel.Sample) []Event {
	saved, savedBoot := d.state.Gap, d.state.GapBoot
	d.state.Gap, d.state.GapBoot = gap(cur), cur.Boot
	if savedBoot == 0 || cur.Boot <= savedBoot {
		return nil
	}
	elapsed := cur.Boot - savedBoot
	dGap := gap(cur) - saved
	limit := 2*cur.Window + int64(d.cfg.MinStep) + int64(d.cfg.MaxSlewRate*float64(elapsed))
	if abs(dGap) <= limit {
		return nil
	}
	d.stats.Steps++
	d.state.Epoch = nextEpoch(d.state.Epoch)
	d.state.Seq++
	d.out[0] = Event{
		Type: TypeStep, Seq: d.state.Seq, Epoch: d.state.Epoch, Step: time.Duration(dGap),
		//clockwatch:wallclock-ok dGap is an offset change (see Observe): this is the wall time the clock showed before the step, as data
		WallBefore: time.Unix(0, cur.Real-dGap), WallAfter: time.Unix(0, cur.Real),
		Seen: SeenRestart, Delay: time.Duration(elapsed), Mono: cur.Mono, Boot: cur.Boot,
		Uncertainty: time.Duration(2 * cur.Window),
	}
	return d.out[:1]
}

func (d *Detector) newEvent(t Type, prev, cur kernel.Sample, marked, sampled bool, markMono int64) Event {
	e := Event{
		Type:        t,
		Seq:         d.state.Seq,
		Epoch:       d.state.Epoch,
		Mono:        cur.Mono,
		Boot:        cur.Boot,
		WallAfter:   time.Unix(0, cur.Real),
		WallBefore:  time.Unix(0, cur.Real),
		Uncertainty: time.Duration(prev.Window + cur.Window),
		Seen:        SeenSampling,
		Delay:       time.Duration(cur.Mono - prev.Mono),
	}
	if marked {
		e.Seen = SeenClockSet
		if sampled {
			e.Seen = SeenBoth
		}
		e.Delay = time.Duration(max(cur.Mono+cur.Window-markMono, 0))
	}
	return e
}

// trackSlew updates the slew of the last interval and the windowed rate.
func (d *Detector) trackSlew(cur kernel.Sample, dGap, dMono, noise int64) {
	d.lastRateValid = abs(dGap) > noise
	d.lastRate = 0
	if d.lastRateValid {
		d.lastRate = float64(dGap) / float64(dMono)
	}
	if span := cur.Mono - d.refMono; span >= int64(d.cfg.SlewWindow) {
		//clockwatch:wallclock-ok the change of REALTIME minus BOOTTIME over a monotonic span is the slew rate being measured
		d.slew = Slew{Rate: float64(gap(cur)-d.refGap) / float64(span), Valid: true}
		d.resetSlewRef(cur)
	}
}

func (d *Detector) resetSlewRef(s kernel.Sample) {
	d.refMono = s.Mono
	d.refGap = gap(s)
	d.lastRateValid = false
	d.lastRate = 0
}

// isLeap reports whether a step of REALTIME is the kernel applying a leap
// second: REALTIME moved by one second while TAI−BOOTTIME did not move, that
// is the TAI offset changed by the opposite second.
func isLeap(prev, cur kernel.Sample, dGap, noise int64) bool {
	if prev.TAI == 0 || cur.TAI == 0 {
		return false
	}
	dTAIGap := (cur.TAI - cur.Boot) - (prev.TAI - prev.Boot)
	return abs(dTAIGap) <= noise && abs(abs(dGap)-int64(time.Second)) <= noise
}

// nextEpoch increments an epoch, saturating at MaxEpoch (the journal logs
// it): wrapping to 0 would make every old fencing token look current.
func nextEpoch(e uint64) uint64 {
	if e >= MaxEpoch {
		return MaxEpoch
	}
	return e + 1
}

func gap(s kernel.Sample) int64       { return s.Real - s.Boot }
func suspended(s kernel.Sample) int64 { return s.Boot - s.Mono }

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
