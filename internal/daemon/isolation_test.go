package daemon_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/daemontest"
	"github.com/clockwatch/clockwatch/internal/floodtest"
	"github.com/clockwatch/clockwatch/internal/testtool"
)

// TestMain lets this test binary be a flood process of
// TestAbuseIsolation (floodtest.Child returns at once otherwise).
func TestMain(m *testing.M) {
	floodtest.Child()
	os.Exit(m.Run())
}

// Isolation bounds, generous for a loaded CI machine (the goal on a quiet
// one, p99 within 2× the baseline's and max 20 ms, is measured by make
// bench-isolation): a flood may take the good subscriber's p50 to 3× the
// baseline's plus isolationP50Slack, its p90 to 4× plus isolationP90Slack
// and its p99 to 4× plus isolationP99Slack (one drill in a hundred: a
// loaded machine's scheduler alone makes tens of ms). Before the lane
// (issue 32) the floods took the p50 to 1–380 ms and the p99 to
// 140–1,500 ms at load 18–27, where the same run's baselines had p50
// 0.4 ms and p99 1–20 ms; after, at load 22–25: p50 0.3–1.8 ms, p99 6–85 ms.
const (
	isolationP50Slack = 3 * time.Millisecond
	isolationP90Slack = 10 * time.Millisecond
	isolationP99Slack = 100 * time.Millisecond
	// A new root client is greeted on the reserved socket within this
	// whatever the floods (it waited up to 8 s in the backlog before, or
	// was refused EAGAIN).
	isolationHelloMax = time.Second
	isolationDrills   = 100
)

// Other local users cannot slow a subscriber's events: a real clockwatch
// (its unit's Nice=-10) on a real socket, a good root subscriber, and drills
// asked for one after another, with no flood, then under each flood of
// issue 32 (connect/close loops from uid 65534, 2,000 never-reading
// subscribers of two other uids, a 64-connection /metrics flood over TLS,
// a TLS-handshake flood), then all at once, then with no flood again. Each
// flood's p50 and p99 of the drill → good subscriber delivery are judged
// against the baselines of the same run; a new root client must get its
// hello on the reserved socket within isolationHelloMax, never refused.
//
// Fault suite only (CLOCKWATCH_FAULTS; about 2 minutes): it floods the
// machine's two cores on purpose. It runs as root (the floods run as other
// uids).
func TestAbuseIsolation(t *testing.T) {
	if os.Getenv("CLOCKWATCH_FAULTS") == "" {
		t.Skip("floods the machine for about 2 minutes: make test-faults (CLOCKWATCH_FAULTS=1) runs it")
	}
	if os.Geteuid() != 0 {
		testtool.Missing(t, "the floods run as other uids (SysProcAttr.Credential): run the fault suite as root")
	}
	bin := daemontest.Build(t)
	rs, err := floodtest.Run(t.Context(), floodtest.Options{Bin: bin, Drills: isolationDrills, Phases: floodtest.DefaultPhases()})
	var table strings.Builder
	floodtest.Table(&table, rs)
	t.Logf("load average %s\n%s", loadavg(), table.String())
	if err != nil {
		t.Fatal(err)
	}
	var base floodtest.Stats
	for _, r := range rs {
		if len(r.Phase.Floods) == 0 {
			base.P50, base.P90, base.P99 = max(base.P50, r.Delivery.P50), max(base.P90, r.Delivery.P90), max(base.P99, r.Delivery.P99)
		}
	}
	bounds := []struct {
		name   string
		of     func(floodtest.Stats) time.Duration
		factor time.Duration
		slack  time.Duration
	}{
		{"p50", func(s floodtest.Stats) time.Duration { return s.P50 }, 3, isolationP50Slack},
		{"p90", func(s floodtest.Stats) time.Duration { return s.P90 }, 4, isolationP90Slack},
		{"p99", func(s floodtest.Stats) time.Duration { return s.P99 }, 4, isolationP99Slack},
	}
	for _, r := range rs {
		if r.Missed > 0 {
			t.Errorf("%s: %d drills never reached the good subscriber", r.Phase.Name, r.Missed)
		}
		if r.DialErrors > 0 || r.Hello.Max > isolationHelloMax {
			t.Errorf("%s: a new root client on the reserved socket: %d connects refused, hello max %s (want none and at most %s)",
				r.Phase.Name, r.DialErrors, r.Hello.Max, isolationHelloMax)
		}
		if len(r.Phase.Floods) == 0 {
			continue
		}
		for _, b := range bounds {
			if got, limit := b.of(r.Delivery), b.factor*b.of(base)+b.slack; got > limit {
				t.Errorf("%s: the good subscriber's %s is %s, want at most %s (%d× the baselines' %s + %s)",
					r.Phase.Name, b.name, got, limit, b.factor, b.of(base), b.slack)
			}
		}
	}
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return err.Error()
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
