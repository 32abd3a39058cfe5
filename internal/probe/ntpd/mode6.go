package ntpd

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The mode 6 exchange is clockwatch's own rather than facebook/time's
// control.NTPClient, whose reassembly keeps the last fragment's header: its
// Count then covers only the last fragment, so GetAssociations of a
// READSTAT split over several datagrams (ntpd splits at 468 octets, about
// 117 associations) saw only the associations of the last one (300
// configured, 68 seen). It also ignored each fragment's offset and had no
// limit on how much it gathered: a stream of "more" fragments grew the
// process by tens of megabytes within one timeout.

// mode 6 header flags (the second octet).
const (
	flagResponse = 0x80
	flagError    = 0x40
	flagMore     = 0x20
	opMask       = 0x1f
)

// Mode 6 operations clockwatch uses.
const (
	opReadStatus    = 1
	opReadVariables = 2
)

const headerLen = 12

// errNotMode6 is a datagram that is not a mode 6 response: another NTP
// server on the port, not an ntpd that answered.
var errNotMode6 = errors.New("packet is not a mode 6 response")

// MaxReplyBytes caps the data of one reassembled mode 6 reply. ntpd's real
// replies are a few kB: the system variables about 600 octets, a READSTAT 4
// octets per association (300 associations: 1200), an association's
// variables about 500. Anything larger is refused, not gathered.
const MaxReplyBytes = 32 << 10

// maxFragments caps the datagrams one reply may take, duplicates included:
// at ntpd's 468 octets per fragment MaxReplyBytes needs 71.
const maxFragments = 96

// maxDatagram is the read buffer: ntpd's fragments are at most 468 data
// octets plus the header and an optional MAC.
const maxDatagram = 2048

// message is one reassembled mode 6 reply.
type message struct {
	op     uint8
	status uint16
	assoc  uint16
	data   []byte
}

// request builds a mode 6 request datagram.
func request(seq uint16, op uint8, assoc uint16) []byte {
	b := make([]byte, headerLen)
	b[0] = vnMode
	b[1] = op & opMask
	binary.BigEndian.PutUint16(b[2:4], seq)
	binary.BigEndian.PutUint16(b[6:8], assoc)
	return b
}

// reassembler gathers the fragments of one reply. Fragments may come in any
// order and more than once; the reply is complete when the one without the
// "more" flag has arrived and the fragments cover every octet before its end.
type reassembler struct {
	seq   uint16
	op    uint8
	assoc uint16

	buf       []byte
	have      []bool // per octet of buf: received
	end       int    // end of the last fragment; -1 until it arrived
	status    uint16
	fragments int
	err       bool
}

func newReassembler(seq uint16, op uint8, assoc uint16) *reassembler {
	return &reassembler{seq: seq, op: op, assoc: assoc, end: -1}
}

// add takes one datagram. It returns done when the reply is complete, and
// an error for a datagram that cannot belong to any valid reply. Datagrams
// of other exchanges (a late reply to an earlier request) are skipped.
func (r *reassembler) add(p []byte) (done bool, skipped bool, err error) {
	if len(p) < headerLen {
		return false, false, fmt.Errorf("mode 6 reply of %d octets is shorter than its %d-octet header", len(p), headerLen)
	}
	if p[0]&7 != 6 || p[1]&flagResponse == 0 {
		return false, false, fmt.Errorf("%w (first octets %#x %#x)", errNotMode6, p[0], p[1])
	}
	if binary.BigEndian.Uint16(p[2:4]) != r.seq || p[1]&opMask != r.op {
		return false, true, nil
	}
	r.fragments++
	if r.fragments > maxFragments {
		return false, false, fmt.Errorf("mode 6 reply in more than %d fragments", maxFragments)
	}
	status := binary.BigEndian.Uint16(p[4:6])
	assoc := binary.BigEndian.Uint16(p[6:8])
	off := int(binary.BigEndian.Uint16(p[8:10]))
	count := int(binary.BigEndian.Uint16(p[10:12]))
	if r.op == opReadVariables && assoc != r.assoc {
		return false, true, nil
	}
	if count > len(p)-headerLen {
		return false, false, fmt.Errorf("mode 6 fragment declares %d data octets, but only %d were received", count, len(p)-headerLen)
	}
	if off+count > MaxReplyBytes {
		return false, false, fmt.Errorf("mode 6 reply larger than %d octets (a fragment at offset %d with %d octets): ntpd's replies are a few kB", MaxReplyBytes, off, count)
	}
	if r.end >= 0 && off+count > r.end {
		return false, false, fmt.Errorf("mode 6 fragment at offset %d with %d octets lies past the reply's end at %d", off, count, r.end)
	}
	if p[1]&flagError != 0 {
		r.err, r.status = true, status
		return true, false, nil
	}
	if n := off + count; n > len(r.buf) {
		r.buf = append(r.buf, make([]byte, n-len(r.buf))...)
		r.have = append(r.have, make([]bool, n-len(r.have))...)
	}
	copy(r.buf[off:], p[headerLen:headerLen+count])
	for i := off; i < off+count; i++ {
		r.have[i] = true
	}
	if p[1]&flagMore == 0 {
		if len(r.buf) > off+count {
			return false, false, fmt.Errorf("mode 6 reply ends at %d octets, but a fragment reached %d", off+count, len(r.buf))
		}
		r.end, r.status = off+count, status
	}
	if r.end < 0 {
		return false, false, nil
	}
	for _, h := range r.have[:r.end] {
		if !h {
			return false, false, nil
		}
	}
	return true, false, nil
}

func (r *reassembler) message() message {
	return message{op: r.op, status: r.status, assoc: r.assoc, data: r.buf[:max(r.end, 0)]}
}

// association is one entry of a READSTAT reply.
type association struct {
	id     uint16
	status uint16
}

// associations decodes a READSTAT reply's data: 4 octets per association,
// its id and its peer status word.
func associations(data []byte) ([]association, error) {
	if len(data)%4 != 0 {
		return nil, fmt.Errorf("association list of %d octets is not a whole number of 4-octet entries", len(data))
	}
	as := make([]association, 0, len(data)/4)
	seen := make(map[uint16]bool, len(data)/4)
	for i := 0; i+4 <= len(data); i += 4 {
		id := binary.BigEndian.Uint16(data[i:])
		if id == 0 {
			return nil, errors.New("association list names association 0")
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		as = append(as, association{id: id, status: binary.BigEndian.Uint16(data[i+2:])})
	}
	return as, nil
}
