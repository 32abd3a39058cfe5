package stepdown

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Version is the protocol version the server announces in its hello.
const Version = 1

// MaxLineBytes is the longest line either end accepts, newline included. The
// server closes a connection that sends a longer one.
const MaxLineBytes = 4096

// Message types. The server sends hello, stepdown, resume, heartbeat,
// peer and error; a client sends ack, drill and watch_peer.
const (
	TypeHello     = "hello"
	TypeStepdown  = "stepdown"
	TypeResume    = "resume"
	TypeHeartbeat = "heartbeat"
	TypeAck       = "ack"
	TypeError     = "error"
	TypeDrill     = "drill"
	// TypeWatchPeer asks to follow the clock of a peer (another node's
	// clockwatch this one measures, named in Peer); TypePeer is the
	// server's answer, at once and at every change of that peer's state,
	// reason or epoch. The local state is not theirs to change.
	TypeWatchPeer = "watch_peer"
	TypePeer      = "peer"
)

// State is whether the local clock can be trusted.
type State string

// The states. Unknown is also what a client assumes when it has no connection
// or its heartbeats stopped.
const (
	StateOK       State = "ok"
	StateStepdown State = "stepdown"
	StateUnknown  State = "unknown"
)

// Reason says why the state is not ok. The set may grow: a client must treat
// an unknown reason like any other stepdown.
type Reason string

// The reasons clockwatch sends.
const (
	// ReasonStep: the wall clock was stepped by more than the threshold.
	ReasonStep Reason = "step"
	// ReasonOffset: a time daemon's estimate of the system clock's offset
	// is over the threshold.
	ReasonOffset Reason = "offset"
	// ReasonUnsynchronized: the time daemon (or, with none answering, the
	// kernel's maxerror) has reported the clock unsynchronised for longer
	// than the grace period.
	ReasonUnsynchronized Reason = "unsynchronized"
	// ReasonErrorBound: the clock's error bound is over the threshold.
	ReasonErrorBound Reason = "error_bound"
	// ReasonProbeLost: clockwatch has lost one of its own probes, so it can
	// no longer vouch for the clock.
	ReasonProbeLost Reason = "probe_lost"
	// ReasonSuspend: the machine resumed from suspend. CLOCK_MONOTONIC
	// stood still meanwhile, so a lease timed with it may have expired
	// unnoticed.
	ReasonSuspend Reason = "suspend"
	// ReasonGrandmasterChanged: a PTP source follows a grandmaster other
	// than the one it followed before: the time can move by the two
	// grandmasters' difference, which no offset shows at the change.
	ReasonGrandmasterChanged Reason = "grandmaster_changed"
	// ReasonVMDisruption: the hypervisor says this VM's clock was disrupted:
	// VMClock's disruption marker changed (a live migration onto another
	// host, a restore from a snapshot), also while clockwatch was not
	// running, or its clock status is "unreliable". Nothing in the guest
	// steps the clock: it may be off by the pause or the other host's error.
	ReasonVMDisruption Reason = "vm_disruption"
	// ReasonPeerOffset: this node's clock disagrees with a strict majority
	// of the other clockwatch agents it measured (at least two) by more
	// than peers.max_offset beyond the measurement's uncertainty, for
	// longer than the grace: its time daemon may vouch for it, the fleet
	// does not.
	ReasonPeerOffset Reason = "peer_offset"
	// ReasonDrill: an operator asked for a drill; nothing is wrong.
	ReasonDrill Reason = "drill"
	// ReasonPeerUnreachable: (peer messages only) this node cannot
	// measure the peer (it does not answer, or is not among this node's
	// peers): its clock is unknown.
	ReasonPeerUnreachable Reason = "peer_unreachable"
	// ReasonStarting: clockwatch has just started and has no reading yet.
	ReasonStarting Reason = "starting"
)

// TriggerReasons are the reasons of the real triggers, in the order the
// protocol documents them: the one list the server's metrics, its drill
// validation and `clockwatch drill` use.
func TriggerReasons() []Reason {
	return []Reason{ReasonStep, ReasonOffset, ReasonUnsynchronized, ReasonErrorBound, ReasonProbeLost, ReasonSuspend, ReasonGrandmasterChanged, ReasonVMDisruption, ReasonPeerOffset}
}

// DrillReasons are the reasons a drill may carry: drill itself and every
// trigger's.
func DrillReasons() []Reason { return append([]Reason{ReasonDrill}, TriggerReasons()...) }

// Error codes of error messages.
const (
	CodeUnknownType  = "unknown_type"
	CodeBadRequest   = "bad_request"
	CodeForbidden    = "forbidden"
	CodeBusy         = "busy"
	CodeGarbage      = "garbage"
	CodeLineTooLong  = "line_too_long"
	CodeFlood        = "flood"
	CodeShuttingDown = "shutting_down"
)

// Message is one line of the protocol, in either direction. Fields that do not
// apply to a type are left zero and omitted on the wire. A client must ignore
// fields it does not know.
type Message struct {
	// Type is one of the Type constants.
	Type string `json:"type"`
	// Version is the protocol version (hello only).
	Version int `json:"version,omitempty"`
	// State is the state after this message (hello, stepdown, resume,
	// heartbeat).
	State State `json:"state,omitempty"`
	// Epoch counts the clock steps clockwatch has seen on this machine,
	// persisted across restarts: a client that sees it change knows the
	// clock stepped even if it missed the event.
	Epoch uint64 `json:"epoch"`
	// Seq numbers the stepdown and resume events of one server process; a
	// hello and a heartbeat carry the seq of the latest event. An ack names
	// the seq it acknowledges.
	Seq uint64 `json:"seq"`
	// Reason says why the state is not ok (hello, stepdown, heartbeat), or
	// which stepdown a resume ends. A drill request names the reason to
	// simulate.
	Reason Reason `json:"reason,omitempty"`
	// Drill is true when the event is a drill: nothing is wrong with the
	// clock, but a client should behave as if there were.
	Drill bool `json:"drill,omitempty"`
	// StepSeconds is the size of the step, positive when the clock jumped
	// forward.
	StepSeconds *float64 `json:"step_seconds,omitempty"`
	// OffsetSeconds is the system clock's offset from true time as chrony
	// estimates it, positive when the clock is ahead.
	OffsetSeconds *float64 `json:"offset_seconds,omitempty"`
	// ErrorBoundSeconds is the bound on the clock's error.
	ErrorBoundSeconds *float64 `json:"error_bound_seconds,omitempty"`
	// Source names what reported the condition (e.g. "chrony", "kernel") or
	// the probe that was lost.
	Source string `json:"source,omitempty"`
	// WallBefore and WallAfter are the wall clock just before and after a
	// step, as clockwatch read it.
	WallBefore time.Time `json:"wall_before,omitzero"`
	WallAfter  time.Time `json:"wall_after,omitzero"`
	// MonoNanos is CLOCK_MONOTONIC, in nanoseconds, when the condition was
	// seen: comparable with the client's own monotonic clock on this machine.
	MonoNanos int64 `json:"mono_ns,omitempty"`
	// Detail is a human-readable explanation.
	Detail string `json:"detail,omitempty"`
	// HeartbeatSeconds and HoldDownSeconds describe the server's timing
	// (hello only).
	HeartbeatSeconds float64 `json:"heartbeat_seconds,omitempty"`
	HoldDownSeconds  float64 `json:"hold_down_seconds,omitempty"`
	// Since is when the state began, by the server's wall clock, to the
	// millisecond (hello only; older servers omit it).
	Since time.Time `json:"since,omitzero"`
	// Subscribers is how many clients are connected, this one included
	// (hello only; older servers omit it).
	Subscribers int `json:"subscribers,omitempty"`
	// HoldSeconds is how long a drill stays in stepdown before its resume
	// (drill requests and drill events).
	HoldSeconds float64 `json:"hold_seconds,omitempty"`
	// Code and Error describe an error message.
	Code  string `json:"code,omitempty"`
	Error string `json:"error,omitempty"`
	// Peer names the peer a watch_peer asks for and a peer message is
	// about: as this node names it (a peers.static entry, an IP:port, a
	// Node's name), or its IP address.
	Peer string `json:"peer,omitempty"`
}

// Float returns a pointer to v, for the optional number fields of Message.
func Float(v float64) *float64 { return &v }

// ErrGarbage is wrapped by ParseMessage's errors for lines that are not a JSON
// object with a type.
var ErrGarbage = errors.New("not a protocol message")

// ParseMessage decodes one line (with or without its newline). It accepts any
// JSON object with a string "type"; unknown fields are ignored so that newer
// servers can add them. Lines longer than MaxLineBytes are refused.
func ParseMessage(line []byte) (Message, error) {
	if len(line) > MaxLineBytes {
		return Message{}, fmt.Errorf("%w: line of %d bytes is longer than %d", ErrGarbage, len(line), MaxLineBytes)
	}
	line = bytes.TrimRight(line, "\r\n")
	var m Message
	if err := json.Unmarshal(line, &m); err != nil {
		return Message{}, fmt.Errorf("%w: %w", ErrGarbage, err)
	}
	if m.Type == "" {
		return Message{}, fmt.Errorf("%w: no \"type\" field", ErrGarbage)
	}
	return m, nil
}

// AppendLine appends m as one JSON line, newline included.
func (m Message) AppendLine(dst []byte) []byte {
	b, err := json.Marshal(m)
	if err != nil {
		// Only non-finite floats can fail; send them as absent rather
		// than break the stream.
		m.StepSeconds, m.OffsetSeconds, m.ErrorBoundSeconds = finite(m.StepSeconds), finite(m.OffsetSeconds), finite(m.ErrorBoundSeconds)
		m.HeartbeatSeconds, m.HoldDownSeconds, m.HoldSeconds = 0, 0, 0
		b, _ = json.Marshal(m)
	}
	return append(append(dst, b...), '\n')
}

func finite(p *float64) *float64 {
	if p == nil || *p != *p || *p > 1e308 || *p < -1e308 {
		return nil
	}
	return p
}

// String is the human-readable one-line form clockwatch watch prints.
func (m Message) String() string {
	var b bytes.Buffer
	b.WriteString(m.Type)
	switch m.Type {
	case TypeHello, TypeHeartbeat, TypeStepdown, TypeResume:
		fmt.Fprintf(&b, " state=%s epoch=%d seq=%d", m.State, m.Epoch, m.Seq)
	case TypePeer:
		fmt.Fprintf(&b, " peer=%s state=%s epoch=%d", m.Peer, m.State, m.Epoch)
	case TypeWatchPeer:
		fmt.Fprintf(&b, " peer=%s", m.Peer)
	case TypeAck:
		fmt.Fprintf(&b, " seq=%d", m.Seq)
	}
	if m.Reason != "" {
		fmt.Fprintf(&b, " reason=%s", m.Reason)
	}
	if m.Drill {
		b.WriteString(" drill=true")
	}
	if m.StepSeconds != nil {
		fmt.Fprintf(&b, " step=%s", secs(*m.StepSeconds))
	}
	if m.OffsetSeconds != nil {
		fmt.Fprintf(&b, " offset=%s", secs(*m.OffsetSeconds))
	}
	if m.ErrorBoundSeconds != nil {
		fmt.Fprintf(&b, " error_bound=%s", secs(*m.ErrorBoundSeconds))
	}
	if m.Source != "" {
		fmt.Fprintf(&b, " source=%s", m.Source)
	}
	if m.Code != "" {
		fmt.Fprintf(&b, " code=%s", m.Code)
	}
	if m.Error != "" {
		fmt.Fprintf(&b, " error=%q", m.Error)
	}
	if m.Detail != "" {
		fmt.Fprintf(&b, " detail=%q", m.Detail)
	}
	return b.String()
}

func secs(s float64) string {
	return time.Duration(s * float64(time.Second)).String()
}
