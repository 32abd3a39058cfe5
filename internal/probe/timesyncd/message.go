package timesyncd

import (
	"fmt"
	"math"
	"net/netip"
	"strings"
	"time"

	"github.com/clockwatch/clockwatch/internal/timesource"
)

// NTPMessage is timesyncd's NTPMessage property: the last NTP reply it
// accepted, with its own send and receive times.
type NTPMessage struct {
	// Leap, Version and Mode are the reply's header fields.
	Leap, Version, Mode uint32
	// Stratum is the server's stratum.
	Stratum uint32
	// Precision is the server's clock precision as a power of two (-20:
	// about 1 µs).
	Precision int32
	// RootDelay and RootDispersion are the server's, from the reply.
	RootDelay, RootDispersion time.Duration
	// RefID is the server's reference ID (ASCII at stratum 1, else an
	// IPv4 address or a hash).
	RefID [4]byte
	// Origin (T1) and Destination (T4) are timesyncd's CLOCK_REALTIME
	// when it sent the request and received the reply; Receive (T2) and
	// Transmit (T3) are the server's. Microseconds since 1970.
	Origin, Receive, Transmit, Destination int64
	// Spike is set when timesyncd ignored the reply as a spike (it did not
	// correct the clock with it).
	Spike bool
	// PacketCount counts the replies timesyncd accepted since it started.
	PacketCount uint64
	// Jitter is timesyncd's RMS of the offsets of its last samples.
	Jitter time.Duration
}

// Valid reports whether the message is a reply: timesyncd publishes zeros
// until its first one.
func (m NTPMessage) Valid() bool { return m.PacketCount > 0 && m.Destination > 0 && m.Origin > 0 }

// Offset is the local clock minus the server's at the exchange (positive:
// local ahead), from ((T2−T1)+(T3−T4))/2, which is the server minus local.
func (m NTPMessage) Offset() time.Duration {
	return -micros((float64(m.Receive)-float64(m.Origin))+(float64(m.Transmit)-float64(m.Destination)),
		(m.Receive-m.Origin)+(m.Transmit-m.Destination), 2)
}

// micros is n/div microseconds as a Duration, n a sum of differences of
// timestamps: exact (from the wrapping int64 sum) when the result is within
// a few weeks, else saturated from approx, the sum in float64. The
// timestamps come from the bus as any 64-bit values, and a plain
// conversion wrapped: a hostile or broken timesyncd's offset of centuries
// read as a small one.
func micros(approx float64, n int64, div int64) time.Duration {
	if math.Abs(approx) < 1e12 {
		// Wrapping int64 arithmetic is exact modulo 2^64: when the true
		// sum fits, n is it.
		return timesource.Units(n/div, time.Microsecond)
	}
	d, _ := timesource.Offset("timesyncd's figure", approx/float64(div)*1e-6) // finite: from integers
	return d
}

// Delay is the round trip of the exchange: (T4−T1)−(T3−T2).
func (m NTPMessage) Delay() time.Duration {
	return micros((float64(m.Destination)-float64(m.Origin))-(float64(m.Transmit)-float64(m.Receive)),
		(m.Destination-m.Origin)-(m.Transmit-m.Receive), 1)
}

// PrecisionDuration is 2^Precision.
func (m NTPMessage) PrecisionDuration() time.Duration {
	return time.Duration(math.Ldexp(float64(time.Second), int(max(-40, min(m.Precision, 10)))))
}

// maxSlew is timesyncd's NTP_MAX_ADJUST: it slews offsets below 0.4 s
// through the kernel's PLL and steps the clock by larger ones.
const maxSlew = 400 * time.Millisecond

// Stepped reports whether timesyncd stepped the clock by the sample's
// offset as soon as it received it (a sample it did not ignore, at least
// 0.4 s off).
func (m NTPMessage) Stepped() bool {
	o := m.Offset()
	return !m.Spike && (o >= maxSlew || o <= -maxSlew)
}

// CurrentOffset is the local clock minus true time now, as timesyncd's
// figures say: 0 after a step (the clock was set to the server's time), the
// sample's offset otherwise (a slew moves it towards 0 over minutes, a spike
// left it alone).
func (m NTPMessage) CurrentOffset() time.Duration {
	if m.Stepped() {
		return 0
	}
	return m.Offset()
}

// phi is NTP's frequency tolerance (RFC 5905): how fast an undisciplined
// clock's error may grow, 15 µs per second.
const phi = 15e-6

// ErrorBound bounds |local clock − true time| age after the sample:
// |current offset| + delay/2 + root delay/2 + root dispersion + precision +
// 15 ppm × age. delay/2 bounds the sample's own error (the true offset lies
// within the measured one ± half the round trip) and root delay/2 + root
// dispersion the server's (its root distance); together they are what chronyd
// and ntpd call root delay/2 + root dispersion, whose root delay includes their
// own hop. The age term is the dispersion chronyd and ntpd add with time.
func (m NTPMessage) ErrorBound(age time.Duration) time.Duration {
	d := max(m.Delay(), 0)
	growth, _ := timesource.Bound("timesyncd's dispersion growth", phi*max(age, 0).Seconds())
	return timesource.Sum(timesource.Abs(m.CurrentOffset()), d/2, m.RootDelay/2, m.RootDispersion, m.PrecisionDuration(), growth)
}

// RefIDString is the reference ID as ntpq and chronyc print it: the ASCII
// name at stratum 1, else a dotted quad.
func (m NTPMessage) RefIDString() string {
	if m.Stratum <= 1 {
		return strings.TrimRight(strings.Map(func(r rune) rune {
			if r < 0x20 || r > 0x7e {
				return -1
			}
			return r
		}, string(m.RefID[:])), " ")
	}
	return netip.AddrFrom4(m.RefID).String()
}

// Properties are the org.freedesktop.timesync1.Manager properties read.
type Properties struct {
	// ServerName is the server timesyncd uses now ("" when none).
	ServerName string
	// ServerAddress is its address; invalid when timesyncd has none.
	ServerAddress netip.Addr
	// PollInterval is timesyncd's current poll interval; PollIntervalMin and
	// PollIntervalMax its bounds.
	PollInterval, PollIntervalMin, PollIntervalMax time.Duration
	// RootDistanceMax is the largest root distance timesyncd accepts.
	RootDistanceMax time.Duration
	// Frequency is the frequency correction timesyncd last set in the
	// kernel, as a ratio (the kernel's scaled ppm / 2^16 × 1e-6).
	Frequency float64
	// Message is the last reply accepted.
	Message NTPMessage
}

// freshPolls and retrySlack make a sample stale: older than two of
// timesyncd's poll intervals plus its first retry (15 s) means at least two
// polls went unanswered.
const (
	freshPolls = 2
	retrySlack = 15 * time.Second
	// minPoll is timesyncd's smallest poll interval (PollIntervalMinSec=
	// cannot go below 16 s), used when the property is missing.
	minPoll = 16 * time.Second
)

// StaleAfter is the sample age past which timesyncd has lost its server.
func (p Properties) StaleAfter() time.Duration {
	return freshPolls*max(p.PollInterval, minPoll) + retrySlack
}

// Server is "name (address)" or what of it timesyncd has.
func (p Properties) Server() string {
	switch {
	case p.ServerName == "" && !p.ServerAddress.IsValid():
		return ""
	case !p.ServerAddress.IsValid() || p.ServerName == p.ServerAddress.String():
		return p.ServerName
	case p.ServerName == "":
		return p.ServerAddress.String()
	}
	return fmt.Sprintf("%s (%s)", p.ServerName, p.ServerAddress)
}
