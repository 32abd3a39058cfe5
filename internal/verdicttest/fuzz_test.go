package verdicttest_test

import (
	"math"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/loop"
	"github.com/clockwatch/clockwatch/internal/probe/ptp"
	"github.com/clockwatch/clockwatch/internal/probe/sntp"
	"github.com/clockwatch/clockwatch/internal/probe/timesyncd"
	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/clockwatch/clockwatch/internal/verdicttest"
	"github.com/facebook/time/ptp/protocol"
)

// The sources whose decoders give integers (ptp4l's scaled nanoseconds,
// timesyncd's microsecond timestamps over D-Bus, the SNTP probe's packet
// fields) go wrong by arithmetic: sums and conversions that wrapped. ntpd's
// and chronyd's decoders of bytes have their own fuzz tests
// (internal/probe/ntpd, internal/probe/chrony) ending in the same Check.

// FuzzPTPVerdict: a slave port's offset from master, mean path delay and
// the grandmaster's accuracy, any int64.
func FuzzPTPVerdict(f *testing.F) {
	f.Add(int64(250), int64(1500), uint8(0x21))
	f.Add(int64(math.MinInt64), int64(0), uint8(0xfe))
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64), uint8(0x31))
	f.Add(int64(-5e17), int64(-5e17), uint8(0x20))
	f.Fuzz(func(t *testing.T, offset, delay int64, accuracy uint8) {
		now := time.Now()
		d := ptp.Data{Ports: []ptp.Port{{Number: 1, State: protocol.PortStateSlave, Timestamping: "SOFTWARE"}},
			GrandmasterPresent: true, GrandmasterIdentity: "000000.fffe.000001", ClockIdentity: "000000.fffe.000002",
			OffsetFromMaster: time.Duration(offset), MeanPathDelay: time.Duration(delay), GrandmasterClockAccuracy: accuracy}
		r := ptp.Snapshot{Found: true, Tally: loop.Tally{Up: true, LastSuccess: now}, HaveData: true, Data: d}.Reading()
		raw := verdicttest.Raw{Bound: (math.Abs(float64(offset)) + math.Abs(float64(delay))) / 1e9}
		if a := ptp.Accuracy(accuracy); a > 0 {
			raw.Bound += a.Seconds()
		}
		verdicttest.Check(t, r, raw)
	})
}

// FuzzTimesyncdVerdict: timesyncd's last NTP message, any timestamps and
// root figures as D-Bus carries them (microseconds, clamped as the decoder
// clamps).
func FuzzTimesyncdVerdict(f *testing.F) {
	base := time.Now().UnixMicro()
	f.Add(base, base+100, base+150, base+300, uint64(1000), uint64(2000), int32(-20), false)
	f.Add(int64(0), int64(math.MaxInt64), int64(math.MaxInt64), int64(0), uint64(0), uint64(0), int32(-20), false)
	f.Add(base, base+9e15, base+9e15, base+300, uint64(math.MaxInt64/1000), uint64(1), int32(-20), true)
	f.Fuzz(func(t *testing.T, o, rx, tx, dst int64, rootDelay, rootDisp uint64, precision int32, spike bool) {
		if o <= 0 || dst <= 0 {
			return // not a reply (Valid): no data
		}
		us := func(u uint64) time.Duration { return time.Duration(min(u, math.MaxInt64/1000)) * time.Microsecond }
		m := timesyncd.NTPMessage{Leap: 0, Version: 4, Mode: 4, Stratum: 2, Precision: precision,
			RootDelay: us(rootDelay), RootDispersion: us(rootDisp), Origin: o, Receive: rx, Transmit: tx, Destination: dst,
			Spike: spike, PacketCount: 1}
		now := time.Now()
		s := timesyncd.Snapshot{Props: timesyncd.Properties{Message: m, PollInterval: 32 * time.Second}, HaveData: true,
			Found: true, Tally: loop.Tally{Up: true, LastSuccess: now}, SampleSeen: now}
		r := s.Reading(now)
		theta := -((float64(rx) - float64(o)) + (float64(tx) - float64(dst))) / 2 // µs
		if !spike && math.Abs(theta) >= 4e5 {
			theta = 0 // stepped: timesyncd set the clock
		}
		delay := max(0, (float64(dst)-float64(o))-(float64(tx)-float64(rx)))
		raw := verdicttest.Raw{Bound: (math.Abs(theta) + delay/2) / 1e6}
		raw.Bound += m.RootDelay.Seconds()/2 + m.RootDispersion.Seconds() + m.PrecisionDuration().Seconds()
		verdicttest.Check(t, r, raw)
	})
}

// FuzzSNTPVerdict: a probed server's best sample, any offset (a float from
// the packet's timestamps) and root distance.
func FuzzSNTPVerdict(f *testing.F) {
	f.Add(0.001, int64(1e6), 0)
	f.Add(1e10, int64(0), 0)
	f.Add(math.NaN(), int64(0), 0)
	f.Add(0.0, int64(-1), 0)
	f.Add(-1e300, int64(math.MaxInt64), 3)
	f.Fuzz(func(t *testing.T, offset float64, dist int64, leap int) {
		now := time.Now()
		res := sntp.Result{Server: "192.0.2.1", OK: true, At: now, LastGood: now,
			Best: sntp.Sample{Offset: offset, Stratum: 2, Leap: leap & 3, RootDistance: time.Duration(dist)}}
		r := res.Reading(timesource.Authoritative)
		var raw verdicttest.Raw
		o := raw.Finite("offset", offset)
		d := raw.NonNegative("root distance", float64(dist))
		raw.Bound = math.Abs(o) + d/1e9
		verdicttest.Check(t, r, raw)
	})
}
