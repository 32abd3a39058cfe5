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
// bench-isolation): a flood may add to the good subscriber's p50 at most
// isolationP50Slack over 3× the baseline's, and to its p99 at most
// isolationP99Slack over 4× the baseline's. Before the lane (issue 32)
// the floods took the p50 to 2–70 ms and the p99 to 110–2,500 ms.
const (
	isolationP50Slack = 3 * time.Millisecond
	isolationP99Slack = 25 * time.Millisecond
	// A new root client is greeted on the reserved socket within this
	// whatever the floods (it waited 1.3–10 s in the backlog before).
	isolationHelloMax = time.Second
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
	rs, err := floodtest.Run(t.Context(), floodtest.Options{Bin: bin, Drills: 60, Phases: floodtest.DefaultPhases()})
	var table strings.Builder
	floodtest.Table(&table, rs)
	t.Logf("load average %s\n%s", loadavg(), table.String())
	if err != nil {
		t.Fatal(err)
	}
	var baseP50, baseP99 time.Duration
	for _, r := range rs {
		if len(r.Phase.Floods) == 0 {
			baseP50, baseP99 = max(baseP50, r.Delivery.P50), max(baseP99, r.Delivery.P99)
		}
	}
	p50Bound, p99Bound := 3*baseP50+isolationP50Slack, 4*baseP99+isolationP99Slack
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
		if r.Delivery.P50 > p50Bound {
			t.Errorf("%s: the good subscriber's p50 is %s, want at most %s (3× the baseline's %s + %s)",
				r.Phase.Name, r.Delivery.P50, p50Bound, baseP50, isolationP50Slack)
		}
		if r.Delivery.P99 > p99Bound {
			t.Errorf("%s: the good subscriber's p99 is %s, want at most %s (4× the baseline's %s + %s)",
				r.Phase.Name, r.Delivery.P99, p99Bound, baseP99, isolationP99Slack)
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
