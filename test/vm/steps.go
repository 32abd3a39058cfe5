package vm

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/clockwatch/clockwatch/test/vm/guest"
)

// Guest paths of the harness's own programs, for Options.Files.
const (
	ClockstepPath = "/bin/clockstep"
	StepwatchPath = "/bin/stepwatch"
)

// Step is one clock step a guest script makes: clockstep by Delta with
// Method, or busybox date -s to Date.
type Step struct {
	Delta time.Duration
	// Method is clockstep's: "settime" (clock_settime, loses the
	// microseconds between reading and setting the clock) or "setoffset"
	// (clock_adjtime ADJ_SETOFFSET, exact, as chronyd steps).
	Method string
	// Date, when set, makes the step with date -s Date instead.
	Date string
}

func (s Step) String() string {
	if s.Date != "" {
		return fmt.Sprintf("date -s %q", s.Date)
	}
	return fmt.Sprintf("%s %+v", s.Method, s.Delta)
}

// StandardSteps are the steps of issue 3 (-12.4 s, +1 h, -0.25 s with
// clock_settime, then a date -s), then both methods over sizes from 1 ms to
// a year, both ways: 40 steps, enough for latency percentiles from one boot.
func StandardSteps() []Step {
	steps := []Step{
		{Delta: -12400 * time.Millisecond, Method: "settime"},
		{Delta: time.Hour, Method: "settime"},
		{Delta: -250 * time.Millisecond, Method: "settime"},
		{Date: "2031-05-06 07:08:09"},
	}
	sizes := []time.Duration{time.Millisecond, 3 * time.Millisecond, 20 * time.Millisecond, 500 * time.Millisecond,
		1500 * time.Millisecond, 12400 * time.Millisecond, time.Hour, 24 * time.Hour, 365 * 24 * time.Hour}
	for _, method := range []string{"settime", "setoffset"} {
		for _, size := range sizes {
			steps = append(steps, Step{Delta: -size, Method: method}, Step{Delta: size, Method: method})
		}
	}
	return steps
}

// MadeStep is a Step as the guest made it.
type MadeStep struct {
	Step
	// Applied is the step the kernel made, from the REALTIME−BOOTTIME gap
	// read just before and just after: the truth to compare a detector
	// with.
	Applied time.Duration
	// CallStart and CallReturn are CLOCK_MONOTONIC (ns) just before the
	// call that stepped the clock and just after it returned; zero for
	// date -s. The kernel notifies watchers inside the call, so a watcher's
	// wake falls after CallStart, and may fall before CallReturn.
	CallStart, CallReturn int64
}

// MadeSteps reads, from the result lines on the console, what each of steps
// did, in order. The lines come in step order, since the script makes one
// step at a time; other programs' lines (such as stepwatch's) are skipped.
// It checks that clockstep applied what was asked: exactly with setoffset,
// and short by at most the call's duration with settime.
func MadeSteps(res *Result, steps []Step) ([]MadeStep, error) {
	recs, err := res.Records()
	if err != nil {
		return nil, err
	}
	var mine []Record
	for _, r := range recs {
		if r.Kind == guest.KindStep || r.Kind == guest.KindGap {
			mine = append(mine, r)
		}
	}
	made := make([]MadeStep, 0, len(steps))
	for i, s := range steps {
		m, n, err := madeStep(s, mine)
		if err != nil {
			return made, fmt.Errorf("step %d (%v): %w", i+1, s, err)
		}
		mine = mine[n:]
		made = append(made, m)
	}
	if len(mine) != 0 {
		return made, fmt.Errorf("%d result lines of clockstep after the last step (console line %d)", len(mine), mine[0].Line)
	}
	return made, nil
}

func madeStep(s Step, recs []Record) (MadeStep, int, error) {
	m := MadeStep{Step: s}
	if s.Date != "" {
		if len(recs) < 2 || recs[0].Kind != guest.KindGap || recs[1].Kind != guest.KindGap {
			return m, 0, fmt.Errorf("want two gap readings around date -s")
		}
		var before, after guest.GapReading
		if err := recs[0].Decode(&before); err != nil {
			return m, 0, err
		}
		if err := recs[1].Decode(&after); err != nil {
			return m, 0, err
		}
		m.Applied = time.Duration(after.GapNS - before.GapNS)
		return m, 2, nil
	}
	if len(recs) < 1 || recs[0].Kind != guest.KindStep {
		return m, 0, fmt.Errorf("want a clockstep result")
	}
	var st guest.Step
	if err := recs[0].Decode(&st); err != nil {
		return m, 0, err
	}
	if st.RequestedNS != int64(s.Delta) || st.Method != s.Method {
		return m, 0, fmt.Errorf("console line %d: clockstep did %s %v", recs[0].Line, st.Method, time.Duration(st.RequestedNS))
	}
	m.Applied, m.CallStart, m.CallReturn = time.Duration(st.AppliedNS), st.MonoBeforeSetNS, st.MonoAfterSetNS
	slack := time.Millisecond
	if s.Method == "settime" {
		slack += time.Duration(m.CallReturn - m.CallStart)
	}
	if (m.Applied - s.Delta).Abs() > slack {
		return m, 0, fmt.Errorf("console line %d: clockstep applied %v, asked for %v ± %v", recs[0].Line, m.Applied, s.Delta, slack)
	}
	return m, 1, nil
}

// Summary describes a set of latencies.
type Summary struct {
	N                  int
	Min, P50, P99, Max time.Duration
}

// Summarize returns the count, extremes and nearest-rank percentiles of ds.
func Summarize(ds []time.Duration) Summary {
	if len(ds) == 0 {
		return Summary{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := func(p float64) time.Duration { return s[max(int(math.Ceil(p*float64(len(s))))-1, 0)] }
	return Summary{N: len(s), Min: s[0], P50: rank(0.50), P99: rank(0.99), Max: s[len(s)-1]}
}

func (s Summary) String() string {
	r := func(d time.Duration) string { return d.Round(time.Microsecond).String() }
	return fmt.Sprintf("n=%d min %s p50 %s p99 %s max %s", s.N, r(s.Min), r(s.P50), r(s.P99), r(s.Max))
}

// StepsScript returns script lines that make the steps in order and, after
// each, run the shell command wait, with $CW_STEP set to the step's number
// (from 1) and LibPath's functions at hand, which must return once the
// program under test has seen that many steps: every step is seen on its
// own. Each run of clockstep steps makes as many steps as it can, since a Go
// program start costs a tenth of a second under TCG. date -s steps are
// bracketed by clockstep -gap readings. It needs clockstep at ClockstepPath.
func StepsScript(steps []Step, wait string) string {
	var b strings.Builder
	waitCmd := ". " + LibPath + "; " + wait
	for i := 0; i < len(steps); {
		if s := steps[i]; s.Date != "" {
			fmt.Fprintf(&b, "%[1]s -gap\ndate -s %[2]s >/dev/null\n%[1]s -gap\nCW_STEP=%[3]d sh -c %[4]s\n",
				ClockstepPath, shellQuote(s.Date), i+1, shellQuote(waitCmd))
			i++
			continue
		}
		fmt.Fprintf(&b, "%s -first %d -wait %s", ClockstepPath, i+1, shellQuote(waitCmd))
		for ; i < len(steps) && steps[i].Date == ""; i++ {
			fmt.Fprintf(&b, " %s:%s", steps[i].Method, steps[i].Delta)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// shellQuote quotes s for sh as one word.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
