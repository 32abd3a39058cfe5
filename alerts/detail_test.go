package alerts

import (
	"os"
	"strings"
	"testing"

	"github.com/clockwatch/clockwatch/internal/exporter"
)

// TestAlertsNeedNoDetail: metrics.detail: false leaves the per-source
// families (exporter.IsDetail) and the histograms' buckets out; no alert or recording rule of
// clockwatch.rules.yml may depend on one, or it would go silent on a host
// that scrapes the summary. The chrony_exporter migration rules do use the
// source series: docs/metrics.md says so.
func TestAlertsNeedNoDetail(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, m := range metricRE.FindAllString(string(b), -1) {
		seen++
		if exporter.IsDetail(m) || strings.HasSuffix(m, "_bucket") {
			t.Errorf("%s uses %s, which metrics.detail: false leaves out", rulesFile, m)
		}
	}
	if seen == 0 {
		t.Fatalf("no clockwatch_ metric found in %s", rulesFile)
	}
	// The check can fail: the migration rules do use a per-source family.
	mb, err := os.ReadFile("clockwatch.migration.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	detail := false
	for _, m := range metricRE.FindAllString(string(mb), -1) {
		detail = detail || exporter.IsDetail(m)
	}
	if !detail {
		t.Errorf("clockwatch.migration.rules.yml uses no per-source family any more: update this test and docs/metrics.md")
	}
}
