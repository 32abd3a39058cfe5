package guest

import "encoding/json"

// Result kinds printed by the harness's guest programs.
const (
	KindStep = "step"
	KindGap  = "gap"
	KindWake = "wake"
	// KindStepdownMsg is a message sockwatch received.
	KindStepdownMsg = "stepdown_msg"
)

// Step is what clockstep prints after stepping the clock (kind "step").
type Step struct {
	// Method is how the clock was stepped: "settime" or "setoffset".
	Method string `json:"method"`
	// RequestedNS is the step asked for, signed: negative is backwards.
	RequestedNS int64 `json:"requested_ns"`
	// AppliedNS is GapAfterNS−GapBeforeNS: the step the kernel made. With
	// settime it falls short of RequestedNS by the microseconds between
	// reading the clock and setting it.
	AppliedNS   int64 `json:"applied_ns"`
	GapBeforeNS int64 `json:"gap_before_ns"`
	GapAfterNS  int64 `json:"gap_after_ns"`
	// MonoBeforeSetNS and MonoAfterSetNS are CLOCK_MONOTONIC just before
	// the call that stepped the clock and just after it returned.
	MonoBeforeSetNS int64 `json:"mono_before_set_ns"`
	MonoAfterSetNS  int64 `json:"mono_after_set_ns"`
}

// GapReading is what clockstep -gap prints (kind "gap"): REALTIME−BOOTTIME and
// CLOCK_MONOTONIC just before reading it.
type GapReading struct {
	GapNS  int64 `json:"gap_ns"`
	MonoNS int64 `json:"mono_ns"`
}

// How stepwatch reads its timerfd (Wake.Watcher).
const (
	// WatcherNetpoll parks the read in Go's netpoller, as clockwatch does.
	WatcherNetpoll = "netpoll"
	// WatcherBlocking reads in a blocking system call.
	WatcherBlocking = "blocking"
)

// Wake is what stepwatch prints for each ECANCELED read of its timerfd (kind
// "wake").
type Wake struct {
	// Watcher says how stepwatch read: WatcherNetpoll or WatcherBlocking.
	Watcher string `json:"watcher"`
	// N counts wakes from 1.
	N int `json:"n"`
	// MonoNS is CLOCK_MONOTONIC read as soon as the read returned.
	MonoNS int64 `json:"mono_ns"`
	// GapBeforeNS is REALTIME−BOOTTIME read after the previous (re-)arm,
	// GapAfterNS the same read after this wake.
	GapBeforeNS int64 `json:"gap_before_ns"`
	GapAfterNS  int64 `json:"gap_after_ns"`
	// DeltaNS is GapAfterNS−GapBeforeNS: the size of the step, signed.
	DeltaNS int64 `json:"delta_ns"`
	// RearmMovedNS is how far the gap moved between the wake and the re-arm
	// (read noise only, unless a second step landed in that window and was
	// missed).
	RearmMovedNS int64 `json:"rearm_moved_ns"`
}

// StepdownMsg is what sockwatch prints for each message from the stepdown
// socket other than heartbeats (kind "stepdown_msg").
type StepdownMsg struct {
	// Tag is sockwatch's -tag, to tell subscribers apart.
	Tag string `json:"tag,omitempty"`
	// ReceivedMonoNS is CLOCK_MONOTONIC as soon as the line was read.
	ReceivedMonoNS int64 `json:"received_mono_ns"`
	// Message is the line the server sent, as it sent it.
	Message json.RawMessage `json:"message"`
}

// KindBoundStatus is a status change boundwatch saw in the bounded-time
// segment.
const KindBoundStatus = "bound_status"

// BoundStatus is what boundwatch prints when the segment's status (as a
// reader computes it) or its VMClock marker changes (kind "bound_status").
type BoundStatus struct {
	// Status is the status a reader computes ("unknown", "synchronized",
	// "free_running", "disrupted").
	Status string `json:"status"`
	// MonoNS is CLOCK_MONOTONIC right after the read that saw it.
	MonoNS int64 `json:"mono_ns"`
	// BoundNS is half the interval's width; Generation the seqlock
	// generation read.
	BoundNS    int64  `json:"bound_ns"`
	Generation uint16 `json:"generation"`
	// Marker is the segment's VMClock disruption marker, with its flag.
	Marker  uint64 `json:"marker,omitempty"`
	VMClock bool   `json:"vmclock,omitempty"`
}
