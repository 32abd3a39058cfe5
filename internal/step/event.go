package step

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Type is what kind of discontinuity an Event reports.
type Type uint8

// The event types. Only TypeStep changes the clock epoch; consumers that act
// on steps (the daemon's stepdown feed) filter on it.
const (
	// TypeStep is a step of the wall clock, a leap second included.
	TypeStep Type = iota + 1
	// TypeClockSet is a clock-set mark from the kernel with no measurable
	// change of the wall clock (a date -s to the current time, a settimeofday
	// at boot): informational.
	TypeClockSet
	// TypeWake is a wake-up from suspend (BOOTTIME advanced past
	// MONOTONIC): the machine is back from suspend. Its name in the
	// journal and the logs stays "resume"; in Go it is not the stepdown
	// protocol's resume (stepdown.TypeResume, "trust is back"). The wall
	// clock did not step; the kernel fires the timerfd on a wake-up too,
	// so this explains such a mark.
	TypeWake
)

var typeNames = [...]string{TypeStep: "step", TypeClockSet: "clock_set", TypeWake: "resume"}

// String returns the name used in JSON: step, clock_set or resume.
func (t Type) String() string {
	if int(t) < len(typeNames) && typeNames[t] != "" {
		return typeNames[t]
	}
	return "unknown"
}

// Seen is how an event was noticed.
type Seen uint8

// The ways an event is seen.
const (
	// SeenSampling means only the periodic comparison of samples saw it.
	SeenSampling Seen = iota + 1
	// SeenClockSet means a clock-set mark made a change count that sampling
	// alone would have taken for a slew.
	SeenClockSet
	// SeenBoth means a clock-set mark announced it and the change was also
	// beyond the sampling threshold.
	SeenBoth
	// SeenRestart means the step happened while clockwatch was not running:
	// the first sample after a start disagrees with the gap persisted by the
	// previous run in this boot.
	SeenRestart
)

var seenNames = [...]string{SeenSampling: "sampling", SeenClockSet: "clock_set", SeenBoth: "both", SeenRestart: "restart"}

// String returns the name used in JSON: sampling, clock_set or both.
func (s Seen) String() string {
	if int(s) < len(seenNames) && seenNames[s] != "" {
		return seenNames[s]
	}
	return "unknown"
}

// Event is one discontinuity seen by the Detector.
type Event struct {
	// Type says what happened.
	Type Type
	// Seq numbers the events of this Detector's state, one per event, never
	// going back (it is persisted with the epoch).
	Seq uint64
	// Epoch is the clock epoch after this event: a counter of wall-clock
	// discontinuities, incremented by every step.
	Epoch uint64
	// Step is the signed size of a step: negative when the clock went
	// backwards. For TypeClockSet it is the change measured (within the
	// uncertainty); for TypeWake zero.
	Step time.Duration
	// Leap is true when the step is a leap second applied by the kernel: the
	// wall clock moved by one second while TAI did not.
	Leap bool
	// WallBefore is what the wall clock would read at the detecting sample
	// without the step; WallAfter is what it read.
	WallBefore, WallAfter time.Time
	// Seen says whether a clock-set mark, sampling, or both revealed it.
	Seen Seen
	// Delay is the detection delay in monotonic time. With a mark: from the
	// mark (read as the kernel woke the watcher) to the end of the detecting
	// sample. Sampling only: the time between the two samples, an upper
	// bound, since the step happened somewhere in between. SeenRestart: the
	// BOOTTIME elapsed since the persisted gap was measured.
	Delay time.Duration
	// Mono is CLOCK_MONOTONIC (ns) of the detecting sample.
	Mono int64
	// MarkMono is CLOCK_MONOTONIC (ns) of the clock-set mark that revealed
	// the event (the watcher's read as the kernel woke it), 0 when sampling
	// alone saw it. The Sampler sets it; it is not journalled. From it the
	// Sampler and the daemon's stepdown feed measure their part of the latency.
	MarkMono int64
	// Boot is CLOCK_BOOTTIME (ns) of the detecting sample: with WallAfter it
	// gives the REALTIME−BOOTTIME gap after the event.
	Boot int64
	// Suspended is how long the machine was suspended (TypeWake).
	Suspended time.Duration
	// Uncertainty bounds the error of Step: the read windows of the two
	// samples compared.
	Uncertainty time.Duration
}

// MaxEpoch bounds the epoch and the sequence: 2^53, the largest integer a
// JSON client holding numbers as doubles reads exactly. No machine steps that
// often; a persisted value past it is corruption, and the Detector saturates
// there rather than wrap to 0.
const MaxEpoch = 1 << 53

// Check refuses an event no run of the Detector produces (a persisted one
// that was corrupted or forged): an epoch or sequence past MaxEpoch, negative
// clock readings or durations, a wall time before 1970 or past 2262.
func (e Event) Check() error {
	switch {
	case e.Type == TypeStep && e.Epoch == 0:
		return errors.New("a step with epoch 0: every step increments the epoch")
	case e.Epoch > MaxEpoch || e.Seq > MaxEpoch:
		return fmt.Errorf("epoch %d or seq %d past 2^53: no clock steps that often", e.Epoch, e.Seq)
	case e.Mono < 0 || e.Boot < 0:
		return fmt.Errorf("mono_ns %d or boot_ns %d negative: no kernel reads that", e.Mono, e.Boot)
	case e.Delay < 0 || e.Uncertainty < 0 || e.Suspended < 0:
		return fmt.Errorf("negative delay_seconds, uncertainty_seconds or suspended_seconds")
	case !wallOK(e.WallBefore) || !wallOK(e.WallAfter):
		return fmt.Errorf("wall_before %s or wall_after %s outside 1970..2262: no kernel reads that",
			e.WallBefore.UTC().Format(time.RFC3339), e.WallAfter.UTC().Format(time.RFC3339))
	}
	return nil
}

var (
	minWall = time.Unix(0, 0)
	maxWall = time.Unix(0, math.MaxInt64)
)

func wallOK(t time.Time) bool { return t.IsZero() || (!t.Before(minWall) && !t.After(maxWall)) }

// StepSeconds returns Step in seconds.
func (e Event) StepSeconds() float64 { return e.Step.Seconds() }

// AppendJSON appends the event as one JSON object, without allocating when b
// has room.
func (e Event) AppendJSON(b []byte) []byte {
	b = append(b, '{')
	b = e.AppendJSONFields(b)
	return append(b, '}')
}

// AppendJSONFields appends the event's JSON members without the braces, so
// that a caller can add members of its own (the journal adds the boot id).
func (e Event) AppendJSONFields(b []byte) []byte {
	b = append(b, `"type":"`...)
	b = append(b, e.Type.String()...)
	b = append(b, `","seq":`...)
	b = strconv.AppendUint(b, e.Seq, 10)
	b = append(b, `,"epoch":`...)
	b = strconv.AppendUint(b, e.Epoch, 10)
	b = append(b, `,"step_seconds":`...)
	b = appendSeconds(b, e.Step)
	if e.Leap {
		b = append(b, `,"leap":true`...)
	}
	b = append(b, `,"seen":"`...)
	b = append(b, e.Seen.String()...)
	b = append(b, `","delay_seconds":`...)
	b = appendSeconds(b, e.Delay)
	b = append(b, `,"mono_ns":`...)
	b = strconv.AppendInt(b, e.Mono, 10)
	if e.Boot != 0 {
		b = append(b, `,"boot_ns":`...)
		b = strconv.AppendInt(b, e.Boot, 10)
	}
	if !e.WallBefore.IsZero() || !e.WallAfter.IsZero() {
		b = append(b, `,"wall_before":"`...)
		b = e.WallBefore.UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, `","wall_after":"`...)
		b = e.WallAfter.UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	if e.Type == TypeWake {
		b = append(b, `,"suspended_seconds":`...)
		b = appendSeconds(b, e.Suspended)
	}
	b = append(b, `,"uncertainty_seconds":`...)
	return appendSeconds(b, e.Uncertainty)
}

func appendSeconds(b []byte, d time.Duration) []byte {
	return strconv.AppendFloat(b, d.Seconds(), 'f', -1, 64)
}

// MarshalJSON encodes the event as AppendJSON does.
func (e Event) MarshalJSON() ([]byte, error) { return e.AppendJSON(nil), nil }

// eventJSON is the decoding shape of an Event.
type eventJSON struct {
	Type        string    `json:"type"`
	Seq         uint64    `json:"seq"`
	Epoch       uint64    `json:"epoch"`
	Step        float64   `json:"step_seconds"`
	Leap        bool      `json:"leap"`
	Seen        string    `json:"seen"`
	Delay       float64   `json:"delay_seconds"`
	Mono        int64     `json:"mono_ns"`
	Boot        int64     `json:"boot_ns"`
	WallBefore  time.Time `json:"wall_before"`
	WallAfter   time.Time `json:"wall_after"`
	Suspended   float64   `json:"suspended_seconds"`
	Uncertainty float64   `json:"uncertainty_seconds"`
}

// UnmarshalJSON decodes what MarshalJSON writes. Unknown members are ignored
// so that the journal can add its own.
func (e *Event) UnmarshalJSON(data []byte) error {
	var j eventJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	t, ok := parseName(typeNames[:], j.Type)
	if !ok {
		return fmt.Errorf("unknown event type %q", j.Type)
	}
	s, ok := parseName(seenNames[:], j.Seen)
	if !ok {
		return fmt.Errorf("unknown seen %q", j.Seen)
	}
	*e = Event{
		Type: Type(t), Seq: j.Seq, Epoch: j.Epoch, Step: seconds(j.Step), Leap: j.Leap,
		WallBefore: j.WallBefore, WallAfter: j.WallAfter, Seen: Seen(s), Delay: seconds(j.Delay),
		Mono: j.Mono, Boot: j.Boot, Suspended: seconds(j.Suspended), Uncertainty: seconds(j.Uncertainty),
	}
	return nil
}

func parseName(names []string, name string) (int, bool) {
	for i, n := range names {
		if n != "" && n == name {
			return i, true
		}
	}
	return 0, false
}

func seconds(f float64) time.Duration {
	// Round rather than truncate so that a decoded -12.4 is -12.4 s exactly.
	if f < 0 {
		return time.Duration(f*1e9 - 0.5)
	}
	return time.Duration(f*1e9 + 0.5)
}
