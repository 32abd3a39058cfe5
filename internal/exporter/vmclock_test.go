package exporter

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/clockwatch/clockwatch/internal/loop"
	"github.com/clockwatch/clockwatch/internal/probe/vmclock"
	"github.com/clockwatch/clockwatch/internal/timesource"
)

var updateVMClock = flag.Bool("update-vmclock", false, "rewrite testdata/vmclock-*.prom")

type fixedVMClock vmclock.Snapshot

func (f fixedVMClock) Snapshot() vmclock.Snapshot { return vmclock.Snapshot(f) }

func TestVMClockCollector(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	// qemu 10's page after a live migration: only the marker.
	qemu := vmclock.Snapshot{Found: true, Tally: loop.Tally{Up: true, Polls: 40, LastSuccess: at.Add(-100 * time.Millisecond)},
		Disruptions: 1, DisruptionAt: at.Add(-3 * time.Second),
		Page: vmclock.Page{Size: 4096, Version: 1, CounterID: vmclock.CounterInvalid, SeqCount: 4, DisruptionMarker: 2}}
	// A hypervisor that offers time, with every flag.
	full := qemu
	full.Page = vmclock.Page{Size: 4096, Version: 1, CounterID: vmclock.CounterX86TSC, SeqCount: 8, DisruptionMarker: 9,
		Flags: vmclock.FlagTimeMaxErrorValid | vmclock.FlagTimeEstErrorValid | vmclock.FlagPeriodMaxErrorValid |
			vmclock.FlagPeriodEstErrorValid | vmclock.FlagDisruptionImminent | vmclock.FlagTAIOffsetValid | vmclock.FlagVMGenCounterPresent,
		ClockStatus: vmclock.StatusSynchronized, TAIOffset: 37, LeapIndicator: vmclock.LeapPrePos,
		Period: 1 << 40, PeriodMaxErrorRate: 1 << 20, PeriodEstErrorRate: 1 << 10,
		TimeSec: 1_800_000_000, TimeFrac: 1 << 63, TimeEstErrorNS: 2_000, TimeMaxErrorNS: 50_000, VMGeneration: 3}
	failing := qemu
	failing.Up, failing.Err, failing.Failures = false, errors.New("torn"), 2
	for _, tc := range []struct {
		name string
		snap vmclock.Snapshot
	}{
		{"absent", vmclock.Snapshot{Tally: loop.Tally{Err: timesource.Absent(os.ErrNotExist)}}},
		{"pinned-missing", vmclock.Snapshot{Tally: loop.Tally{Polls: 3, Failures: 3, Err: os.ErrNotExist}}},
		{"qemu10-migrated", qemu},
		{"full", full},
		{"failing", failing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := NewVMClockCollector(fixedVMClock(tc.snap))
			c.now = func() time.Time { return at }
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(c)
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for _, mf := range mfs {
				if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
					t.Fatal(err)
				}
			}
			golden := filepath.Join("testdata", "vmclock-"+tc.name+".prom")
			if *updateVMClock {
				os.MkdirAll("testdata", 0o755)
				if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), b.String()); diff != "" {
				t.Errorf("metrics (-want +got):\n%s", diff)
			}
			if tc.name != "absent" {
				if probs, err := testutil.CollectAndLint(c); err != nil || len(probs) > 0 {
					t.Errorf("lint: %v %v", probs, err)
				}
			}
		})
	}
}
