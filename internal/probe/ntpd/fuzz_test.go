package ntpd_test

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/clockwatch/clockwatch/internal/ntptest"
	"github.com/clockwatch/clockwatch/internal/probe/ntpd"
	"github.com/clockwatch/clockwatch/internal/verdicttest"
)

// FuzzNtpdVerdict feeds any system variables through a whole poll into the
// policy and health: no input whose figures mean nothing (missing, not a
// finite number, a negative dispersion or delay) or add up over the
// threshold says ok. The seeds run in the normal suite.
func FuzzNtpdVerdict(f *testing.F) {
	for _, s := range []string{
		ntptest.SyncedSystem,
		strings.NewReplacer("rootdisp=2.250", "rootdisp=inf", "offset=0.125", "offset=nan").Replace(ntptest.SyncedSystem),
		strings.Replace(ntptest.SyncedSystem, "rootdisp=2.250, ", "", 1),
		strings.Replace(ntptest.SyncedSystem, "rootdisp=2.250", "rootdisp=1e13", 1),
		strings.Replace(ntptest.SyncedSystem, "rootdisp=2.250", "rootdisp=-1000000", 1),
		strings.Replace(ntptest.SyncedSystem, "offset=0.125", "offset=-1e13", 1),
		strings.Replace(ntptest.SyncedSystem, "offset=0.125", "offset=0x1p1000", 1),
		strings.Replace(ntptest.SyncedSystem, "leap=00, ", "", 1),
		`leap=00, stratum=2, rootdelay=0, rootdisp=0, offset=1e400`,
		`leap=00, stratum=2, rootdelay="1", rootdisp=0, offset=0`,
		`leap=00, stratum=2, rootdelay=1e308, rootdisp=1e308, offset=1e308`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		r := ntpd.ReadingOfSystem(text)
		var raw verdicttest.Raw
		vars, err := ntpd.ParseVars(text)
		if err != nil {
			raw.Invalid, raw.Why = true, "unparseable: "+err.Error()
		}
		num := func(k string) float64 {
			v, ok := vars[k]
			if !ok {
				raw.Finite(k+" missing", math.NaN())
				return 0
			}
			x, err := strconv.ParseFloat(v, 64)
			if err != nil && !strings.Contains(err.Error(), "out of range") {
				raw.Finite(k+" not a number", math.NaN())
			}
			return x
		}
		if _, ok := vars["leap"]; !ok {
			raw.Finite("leap missing", math.NaN())
		}
		off := raw.Finite("offset", num("offset"))
		disp := raw.NonNegative("rootdisp", num("rootdisp"))
		delay := raw.NonNegative("rootdelay", num("rootdelay"))
		raw.Bound = (math.Abs(off) + disp + delay/2) * 1e-3
		verdicttest.Check(t, r, raw)
	})
}
