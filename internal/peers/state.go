package peers

import (
	"bytes"
	"encoding/binary"
	"time"

	"github.com/clockwatch/clockwatch/stepdown"
)

// The state extension field: a reply to a request that carries one (of the
// same size, so that the reply stays no larger than the request) carries
// the answering agent's stepdown state, reason, clock epoch and error
// bound (docs/stepdown-protocol.md, "The peers' exchange").
const (
	// stateFieldType is the field type (RFC 7822): from the top of the
	// type space, away from the IANA-assigned types (NTS's 0x0104 ...).
	stateFieldType = 0xF357
	// stateFieldLen is the whole field, header included: over RFC 7822's
	// 28-byte minimum for a last field without a MAC, and with the header a
	// multiple of AES's 16-byte block: github.com/beevik/ntp v1.6.0 checks
	// the AES-CMAC of a reply whose signed part is not a whole number of
	// blocks against a digest its padding has overwritten (it pads the
	// last block in place, over the MAC that follows), and fails.
	stateFieldLen  = 64
	stateVersion   = 1
	reasonLen      = 32
	flagReply      = 1 << 0
	flagErrorBound = 1 << 1
)

// wireStates numbers the states on the wire (0: unknown).
var wireStates = []stepdown.State{stepdown.StateUnknown, stepdown.StateOK, stepdown.StateStepdown}

// State is what an agent says about its own clock in its replies.
type State struct {
	// State and Reason are its stepdown state now and why it is not ok.
	State  stepdown.State
	Reason stepdown.Reason
	// Epoch is its clock epoch (docs/stepdown-protocol.md): it changes when
	// its clock steps (and at every reboot).
	Epoch uint64
	// ErrorBound bounds its clock's error as its own time daemon says,
	// when HasErrorBound.
	ErrorBound    time.Duration
	HasErrorBound bool
	// Agent is a random number each agent draws at start: a node that
	// finds its own among the replies is measuring itself (a static list
	// shared by every node, an address behind NAT) and drops that peer.
	Agent uint64
}

// appendStateField appends the state field to b: st's, or, for nil, the
// request's placeholder of the same size.
func appendStateField(b []byte, st *State) []byte {
	var f [stateFieldLen]byte
	binary.BigEndian.PutUint16(f[0:], stateFieldType)
	binary.BigEndian.PutUint16(f[2:], stateFieldLen)
	f[4] = stateVersion
	if st != nil {
		f[5] = flagReply
		for i, s := range wireStates {
			if s == st.State {
				f[6] = byte(i)
			}
		}
		binary.BigEndian.PutUint64(f[8:], st.Epoch)
		if st.HasErrorBound && st.ErrorBound >= 0 {
			f[5] |= flagErrorBound
			binary.BigEndian.PutUint64(f[16:], uint64(st.ErrorBound))
		}
		binary.BigEndian.PutUint64(f[24:], st.Agent)
		copy(f[32:32+reasonLen], st.Reason)
	}
	return append(b, f[:]...)
}

// stateFieldAt reports whether b (after the header) starts with a state
// field of this version.
func stateFieldAt(rest []byte) bool {
	return len(rest) >= stateFieldLen && binary.BigEndian.Uint16(rest) == stateFieldType &&
		binary.BigEndian.Uint16(rest[2:]) == stateFieldLen && rest[4] == stateVersion
}

// parseStateField decodes the reply's state field that follows the header
// of pkt; ok is false when there is none.
func parseStateField(pkt []byte) (st State, ok bool) {
	if len(pkt) < headerLen || !stateFieldAt(pkt[headerLen:]) {
		return State{}, false
	}
	f := pkt[headerLen : headerLen+stateFieldLen]
	if f[5]&flagReply == 0 {
		return State{}, false
	}
	st.State = stepdown.StateUnknown
	if int(f[6]) < len(wireStates) {
		st.State = wireStates[f[6]]
	}
	st.Epoch = binary.BigEndian.Uint64(f[8:])
	if f[5]&flagErrorBound != 0 {
		if v := binary.BigEndian.Uint64(f[16:]); v <= uint64(1<<63-1) {
			st.ErrorBound, st.HasErrorBound = time.Duration(v), true
		}
	}
	st.Agent = binary.BigEndian.Uint64(f[24:])
	reason := f[32 : 32+reasonLen]
	if i := bytes.IndexByte(reason, 0); i >= 0 {
		reason = reason[:i]
	}
	st.Reason = stepdown.Reason(printable(reason))
	return st, true
}

// printable keeps the reason's printable ASCII only: it ends up in logs and
// in messages to the socket's clients.
func printable(b []byte) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c > ' ' && c < 0x7f {
			out = append(out, c)
		}
	}
	return string(out)
}
