package exporter

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/probe/chrony"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// countingSnapshot is a snapshot source that counts its calls and whose
// snapshot the test replaces.
type countingSnapshot struct {
	snap  atomic.Pointer[chrony.Snapshot]
	calls atomic.Int64
}

func (c *countingSnapshot) Snapshot() chrony.Snapshot {
	c.calls.Add(1)
	return *c.snap.Load()
}

func text(t *testing.T, g prometheus.Gatherer) string {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// TestChronyGathererMatchesTheUpdater: the registry with the updater's
// Gatherer merged in serves exactly what the registry with the updater alone
// serves, before and after a new poll, and the ages keep growing between
// polls while the rest is reused.
func TestChronyGathererMatchesTheUpdater(t *testing.T) {
	t.Parallel()
	snap := chronySnapshot()
	now := snap.LastSuccess.Add(5 * time.Second)
	src := &countingSnapshot{}
	src.snap.Store(&snap)
	build := func(split bool) prometheus.Gatherer {
		p := NewChronyUpdater(src)
		p.now = func() time.Time { return now }
		reg, err := NewPedanticRegistry(NewScraper(quiet, p))
		if err != nil {
			t.Fatal(err)
		}
		if split {
			return MergeGatherers(reg, p.Gatherer())
		}
		return reg
	}
	plain, split := build(false), build(true)
	mask := func(s string) string { // the chrony series: the process, Go and duration figures differ
		var out bytes.Buffer
		for _, l := range bytes.Split([]byte(s), []byte("\n")) {
			if !bytes.Contains(l, []byte("clockwatch_chrony_")) {
				continue
			}
			out.Write(l)
			out.WriteByte('\n')
		}
		return out.String()
	}
	for i, step := range []func(){
		func() {},
		func() { now = now.Add(3 * time.Second) }, // ages grow, nothing else changes
		func() { // a new poll
			s := snap
			s.Polls++
			s.Data.Tracking.SystemOffset = 0.5
			s.Data.Sources = s.Data.Sources[:1]
			src.snap.Store(&s)
		},
	} {
		step()
		want, got := mask(text(t, plain)), mask(text(t, split))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("step %d: merged output differs from the updater's (-updater +merged):\n%s", i, diff)
		}
	}
	if got := text(t, split); !bytes.Contains([]byte(got), []byte(fmt.Sprintf("%s 8\n", MetricChronyPollAge))) {
		t.Errorf("poll age not 8 s after 3 s more:\n%s", got)
	}
}

// TestChronyGathererReusesTheSnapshot: scrapes between polls gather the
// static figures once.
func TestChronyGathererReusesTheSnapshot(t *testing.T) {
	t.Parallel()
	snap := chronySnapshot()
	src := &countingSnapshot{}
	src.snap.Store(&snap)
	p := NewChronyUpdater(src)
	g := p.Gatherer().(*chronyGatherer)
	first, _ := g.Gather()
	again, _ := g.Gather()
	if len(first) == 0 || len(again) != len(first) {
		t.Fatalf("%d families, then %d", len(first), len(again))
	}
	for i := range first {
		if first[i].GetName() != MetricChronyPollAge && first[i].GetName() != MetricChronySourceLastSampleAge && first[i] != again[i] {
			t.Errorf("%s gathered again for the same snapshot", first[i].GetName())
		}
	}
	s := snap
	s.Polls++
	src.snap.Store(&s)
	third, _ := g.Gather()
	for i := range third {
		if third[i].GetName() == MetricChronyPolls && third[i] == first[i] {
			t.Errorf("%s not gathered again after a new poll", third[i].GetName())
		}
	}
}

func TestMergeGatherersRefusesDuplicates(t *testing.T) {
	t.Parallel()
	a, b := prometheus.NewRegistry(), prometheus.NewRegistry()
	a.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "x"}), prometheus.NewGauge(prometheus.GaugeOpts{Name: "z"}))
	b.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "x"}), prometheus.NewGauge(prometheus.GaugeOpts{Name: "y"}))
	mfs, err := MergeGatherers(a, b).Gather()
	if err == nil {
		t.Error("no error for a family in both")
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	if diff := cmp.Diff([]string{"x", "y", "z"}, names); diff != "" {
		t.Errorf("families (-want +got):\n%s", diff)
	}
}
