package peers

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// The NTP header (RFC 5905, figure 8) and the values a reply carries.
const (
	headerLen = 48
	// modeClient and modeServer are NTP's association modes 3 and 4.
	modeClient = 3
	modeServer = 4
	// leapAlarm (3) is "clock unsynchronised": every NTP client (chronyd,
	// ntpd, systemd-timesyncd, RFC 4330's SNTP) refuses such a reply as a
	// time source.
	leapAlarm = 3
	// stratumUnsynchronized (16) says the same in the stratum field. Not
	// stratum 0: that is a kiss-o'-death, whose codes (RATE, DENY, RSTR)
	// tell a client to back off or go away, which a reply must not say to
	// a client that simply asked the wrong port.
	stratumUnsynchronized = 16
	// precision is 2^-20 s (about 1 µs): what a user-space timestamp of
	// a kernel-timestamped datagram is good for.
	precision = -20
)

// RefID is the reference identifier of every reply, "CWPR" (clockwatch
// peer) in ASCII, as kiss codes and reference clocks are: ntpq and chronyc
// show it, so a person who finds such a server sees what it is.
const RefID = "CWPR"

// ntpEpochOffset is the seconds from 1900-01-01 (NTP's era 0) to 1970-01-01.
const ntpEpochOffset = 2208988800

// header is an NTP packet's fixed part.
type header struct {
	Leap, Version, Mode uint8
	Stratum             uint8
	Poll, Precision     int8
	RootDelay, RootDisp uint32
	RefID               [4]byte
	RefTime, Origin     uint64
	Receive, Transmit   uint64
}

// errShort is a datagram shorter than an NTP header.
var errShort = errors.New("shorter than the 48-byte NTP header")

// parseHeader decodes the fixed part of b.
func parseHeader(b []byte) (header, error) {
	if len(b) < headerLen {
		return header{}, fmt.Errorf("%d bytes: %w", len(b), errShort)
	}
	h := header{
		Leap: b[0] >> 6, Version: (b[0] >> 3) & 7, Mode: b[0] & 7,
		Stratum: b[1], Poll: int8(b[2]), Precision: int8(b[3]),
		RootDelay: binary.BigEndian.Uint32(b[4:]), RootDisp: binary.BigEndian.Uint32(b[8:]),
		RefTime: binary.BigEndian.Uint64(b[16:]), Origin: binary.BigEndian.Uint64(b[24:]),
		Receive: binary.BigEndian.Uint64(b[32:]), Transmit: binary.BigEndian.Uint64(b[40:]),
	}
	copy(h.RefID[:], b[12:16])
	return h, nil
}

// append appends the header's 48 bytes to b.
func (h header) append(b []byte) []byte {
	b = append(b, h.Leap<<6|(h.Version&7)<<3|h.Mode&7, h.Stratum, byte(h.Poll), byte(h.Precision))
	b = binary.BigEndian.AppendUint32(b, h.RootDelay)
	b = binary.BigEndian.AppendUint32(b, h.RootDisp)
	b = append(b, h.RefID[:]...)
	for _, t := range []uint64{h.RefTime, h.Origin, h.Receive, h.Transmit} {
		b = binary.BigEndian.AppendUint64(b, t)
	}
	return b
}

// ntpTime converts t to an NTP timestamp (era 0, which runs to 2036; era 1
// wraps to small numbers, which both ends convert alike).
func ntpTime(t time.Time) uint64 {
	secs := uint64(t.Unix() + ntpEpochOffset)
	frac := (uint64(t.Nanosecond()) << 32) / 1e9
	return secs<<32 | frac
}

// timeOf converts an NTP timestamp back, in the era nearest to near.
func timeOf(ts uint64, near time.Time) time.Time {
	secs := int64(ts >> 32)
	nanos := int64(((ts & 0xffffffff) * 1e9) >> 32)
	t := time.Unix(secs-ntpEpochOffset, nanos)
	// Pick the era (2^32 s) that puts t within half an era of near.
	const era = int64(1) << 32
	d := near.Unix() - t.Unix() + era/2
	n := d / era
	if d < 0 && d%era != 0 {
		n-- // floor, not truncation
	}
	return t.Add(time.Duration(n*era) * time.Second)
}
