package chrony_test

import (
	"encoding/binary"
	"math"
	"os"
	"testing"

	"github.com/clockwatch/clockwatch/internal/chronydtest"
	"github.com/clockwatch/clockwatch/internal/probe/chrony"
	"github.com/clockwatch/clockwatch/internal/verdicttest"
)

// chronyFloat decodes chrony's 32-bit float (coef × 2^(exp−25)), written
// here again rather than taken from the decoder under test.
func chronyFloat(b []byte) float64 {
	x := binary.BigEndian.Uint32(b)
	exp := int32(x>>25) << 25 >> 25
	coef := int32(x<<7) >> 7
	return float64(coef) * math.Pow(2, float64(exp-25))
}

// FuzzChronyVerdict feeds any tracking reply through a whole poll into the
// policy and health: no reply whose root dispersion or delay is below zero,
// or whose |offset| + dispersion + delay/2 is over the threshold, says ok.
// The seeds (the capture, and the 1e10 s, 4.6e18 s and -1000 s) run
// in the normal suite.
func FuzzChronyVerdict(f *testing.F) {
	captured, err := os.ReadFile("testdata/unix-synced/tracking.bin")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(captured)
	for _, edit := range []struct {
		off int
		v   float64
	}{
		{chronydtest.TrackingRootDispersion, 1e10},
		{chronydtest.TrackingRootDispersion, chronydtest.MaxFloat},
		{chronydtest.TrackingRootDispersion, -1000},
		{chronydtest.TrackingRootDelay, -1e-6},
		{chronydtest.TrackingCurrentCorrection, -1e10},
		{chronydtest.TrackingCurrentCorrection, 1e-4},
	} {
		b := append([]byte(nil), captured...)
		chronydtest.Float(b, edit.off, edit.v)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, reply []byte) {
		r := chrony.ReadingOfTracking(reply)
		var raw verdicttest.Raw
		if len(reply) < chronydtest.TrackingRootDispersion+8 {
			raw.Invalid, raw.Why = true, "short reply"
		} else {
			off := chronyFloat(reply[chronydtest.TrackingCurrentCorrection:])
			delay := raw.NonNegative("root delay", chronyFloat(reply[chronydtest.TrackingRootDelay:]))
			disp := raw.NonNegative("root dispersion", chronyFloat(reply[chronydtest.TrackingRootDispersion:]))
			raw.Bound = math.Abs(off) + disp + delay/2
		}
		verdicttest.Check(t, r, raw)
	})
}
