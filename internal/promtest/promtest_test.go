package promtest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/internal/testtool"
)

// TestAlertPath runs the whole harness once: a target whose gauge the test
// flips, Prometheus evaluating an alert on it, Alertmanager sending to the
// webhook; the alert must arrive firing and then resolved.
func TestAlertPath(t *testing.T) {
	t.Parallel()
	testtool.Short(t)
	var value atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "# TYPE harness_condition gauge\nharness_condition %d\n", value.Load())
	}))
	t.Cleanup(target.Close)

	rules := filepath.Join(t.TempDir(), "rules.yml")
	if err := os.WriteFile(rules, []byte(`groups:
  - name: harness
    rules:
      - alert: HarnessCondition
        expr: harness_condition > 0
        labels:
          severity: page
        annotations:
          summary: "condition on {{ $labels.instance }} is {{ $value }}"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	hook := NewWebhook(t)
	am := StartAlertmanager(t, WebhookConfig(hook.URL))
	prom := StartPrometheus(t, PrometheusOptions{
		Targets:       []string{target.Listener.Addr().String()},
		RuleFiles:     []string{rules},
		Alertmanagers: []string{am.Addr},
	})
	prom.WaitTargetsUp(t, "clockwatch", 1, 30*time.Second)

	v, err := prom.QueryVector(context.Background(), "harness_condition")
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != 1 || v[0].Value != 0 {
		t.Fatalf("harness_condition = %v, want one sample of 0", v)
	}
	if _, err := prom.Query(context.Background(), "harness_condition +"); err == nil {
		t.Error("a query that does not parse returned no error")
	}

	start := time.Now()
	value.Store(1)
	firing := hook.Wait(t, "firing", map[string]string{"alertname": "HarnessCondition"}, 30*time.Second)
	t.Logf("condition → firing webhook: %s", firing.Received.Sub(start))
	want := map[string]string{"summary": fmt.Sprintf("condition on %s is 1", target.Listener.Addr())}
	if diff := cmp.Diff(want, firing.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	if firing.Labels["severity"] != "page" || firing.Labels["job"] != "clockwatch" {
		t.Errorf("labels = %v, want severity=page and job=clockwatch", firing.Labels)
	}

	start = time.Now()
	value.Store(0)
	resolved := hook.Wait(t, "resolved", map[string]string{"alertname": "HarnessCondition"}, 30*time.Second)
	t.Logf("condition cleared → resolved webhook: %s", resolved.Received.Sub(start))
}
