package exporter

import (
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
)

// TestDetailGatherer: without the detail, a scrape is the full one without
// the per-source families and without HELP lines, and nothing else changes;
// the switch applies at the next gather both ways, and the full scrape
// after a summary one is intact (the cached families were not changed).
func TestDetailGatherer(t *testing.T) {
	t.Parallel()
	s := chronySnapshot()
	src := s.Data.Sources[0]
	s.Data.Sources = nil
	for i := range 8 {
		src.Address = fmt.Sprintf("127.0.0.%d", 11+i)
		src.Name = src.Address
		s.Data.Sources = append(s.Data.Sources, src)
	}
	cp := NewChronyUpdater(fixedSnapshot(s))
	now := s.LastSuccess.Add(5 * time.Second)
	cp.now = func() time.Time { return now }
	reg, err := NewPedanticRegistry(NewScraper(quiet, cp))
	if err != nil {
		t.Fatal(err)
	}
	var detail atomic.Bool
	detail.Store(true)
	g := DetailGatherer(MergeGatherers(reg, cp.Gatherer()), detail.Load)

	// The values of the Go and process collectors move between gathers.
	value := regexp.MustCompile(`(?m)^([^#].*) \S+$`)
	gather := func() string { return value.ReplaceAllString(text(t, g), "$1 <value>") }
	full := gather()
	var want []string
	sources := 0
	for _, l := range strings.SplitAfter(full, "\n") {
		name := strings.Fields(l + " x x x")[0]
		if name == "#" {
			name = strings.Fields(l)[2]
		}
		if IsDetail(name) {
			if !strings.HasPrefix(l, "#") {
				sources++
			}
			continue
		}
		if strings.HasPrefix(l, "# HELP ") || strings.Contains(l, "{quantile=") {
			continue
		}
		want = append(want, l)
	}
	for _, f := range RuntimeDetail {
		if !strings.Contains(full, "\n"+f+" ") {
			t.Errorf("the full scrape has no %s: RuntimeDetail names a family the Go collector does not export", f)
		}
	}
	if sources < 8*8 {
		t.Fatalf("the full scrape has %d per-source series, want at least 64 (8 sources): %s", sources, full)
	}
	detail.Store(false)
	got := gather()
	if d := cmp.Diff(strings.Join(want, ""), got); d != "" {
		t.Errorf("without the detail (-want +got):\n%s", d)
	}
	if len(got)*2 > len(full) {
		t.Errorf("without the detail %d bytes, with it %d: want less than half", len(got), len(full))
	}
	detail.Store(true)
	if d := cmp.Diff(full, gather()); d != "" {
		t.Errorf("with the detail again (-first +now):\n%s", d)
	}
}

var _ prometheus.Gatherer = DetailGatherer(nil, nil)
