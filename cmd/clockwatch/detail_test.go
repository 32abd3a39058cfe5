//go:build linux

package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMetricsWithoutDetail: with metrics.detail: false the daemon serves
// the golden exposition without its HELP lines and histogram buckets but
// +Inf (no per-source family is in
// the golden output: no chronyd answers there; internal/exporter's
// TestDetailGatherer checks those with 8 sources), and fewer bytes.
func TestMetricsWithoutDetail(t *testing.T) {
	t.Parallel()
	flag := noChronyConfig(t)
	file := strings.TrimPrefix(flag, "--config.file=")
	f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("metrics:\n  detail: false\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	p := startDaemon(t, flag)
	p.waitMetric(t, "clockwatch_chrony_polls_total", func(v string) bool { return v != "0" })
	resp, body := p.get(t, "/metrics")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	if strings.Contains(body, "# HELP") {
		t.Errorf("/metrics has HELP lines with metrics.detail: false")
	}
	golden, err := os.ReadFile(filepath.Join("testdata", "metrics.golden"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, l := range strings.SplitAfter(string(golden), "\n") {
		bucket := strings.Contains(l, "_bucket{") && !strings.Contains(l, `le="+Inf"`)
		if !strings.HasPrefix(l, "# HELP ") && !bucket && !strings.Contains(l, "clockwatch_scrape_collector_duration_seconds") {
			want = append(want, l)
		}
	}
	if diff := cmp.Diff(strings.Join(want, ""), mask(body)); diff != "" {
		t.Errorf("/metrics with metrics.detail: false differs from the golden output without HELP and buckets (-want +got):\n%s", diff)
	}
}
