package exporter

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkChronyScrape serves /metrics from a registry holding the
// ChronyUpdater with 8 chronyd sources (and the build, process and Go collectors, as
// chrony_exporter has): the scrape-time cost, which never includes talking
// to chronyd. cpu-ns/op is the process's CPU time per scrape.
func BenchmarkChronyScrape(b *testing.B) {
	s := chronySnapshot()
	src := s.Data.Sources[0]
	s.Data.Sources = nil
	for i := range 8 {
		src.Address = fmt.Sprintf("127.0.0.%d", 11+i)
		src.Name = src.Address
		s.Data.Sources = append(s.Data.Sources, src)
	}
	scraper := NewScraper(slog.New(slog.DiscardHandler), NewChronyUpdater(fixedSnapshot(s)))
	full, err := NewRegistry(scraper)
	if err != nil {
		b.Fatal(err)
	}
	only := prometheus.NewPedanticRegistry()
	only.MustRegister(scraper)
	// As the daemon serves it: chronyd's figures gathered once per poll.
	cp := NewChronyUpdater(fixedSnapshot(s))
	reg, err := NewRegistry(NewScraper(slog.New(slog.DiscardHandler), cp))
	if err != nil {
		b.Fatal(err)
	}
	cached := MergeGatherers(reg, cp.Gatherer())
	cpu := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	for _, bc := range []struct {
		name string
		reg  prometheus.Gatherer
	}{{"full-registry", full}, {"full-registry-per-poll", cached}, {"chrony-only", only},
		// metrics.detail: false: no per-source families, no HELP text.
		{"full-registry-per-poll-no-detail", DetailGatherer(cached, func() bool { return false })}} {
		b.Run(bc.name, func(b *testing.B) {
			h := MetricsHandler(bc.reg, nil)
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			b.ReportAllocs()
			start := cpu()
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d", w.Code)
				}
			}
			b.ReportMetric(float64(cpu()-start)/float64(b.N), "cpu-ns/op")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			b.ReportMetric(float64(w.Body.Len()), "bytes/scrape")
		})
	}
}
