package health

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/internal/kernel"
	"github.com/clockwatch/clockwatch/internal/timesource"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func set(rs ...timesource.Reading) timesource.Set {
	s := timesource.Set{}
	for _, r := range rs {
		s[r.Source] = r
	}
	return s
}

// chronyR is a reading of an answering chronyd.
func chronyR(offset, bound float64, synced bool) timesource.Reading {
	return timesource.Reading{Source: "chrony", Found: true, Up: true, HasData: true, Synchronized: synced,
		Offset: time.Duration(offset * 1e9), ErrorBound: time.Duration(bound * 1e9)}
}

// ptp4lR is a reading of ptp4l following a grandmaster, its port in state.
func ptp4lR(state string, offset, bound time.Duration) timesource.Reading {
	return timesource.Reading{Source: "ptp4l", Found: true, Up: true, HasData: true, Synchronized: state == "SLAVE",
		Offset: offset, ErrorBound: bound, Grandmaster: "001122.fffe.334455",
		Detail: "port " + state + ", grandmaster 001122.fffe.334455 class 6, 1 step, software timestamps"}
}

func TestJudge(t *testing.T) {
	t.Parallel()
	h := testThresholds()
	synced := kernel.Timex{Status: kernel.StatusPLL, State: kernel.TimeOK, MaxError: 2 * time.Millisecond}
	tests := []struct {
		name  string
		facts Facts
		want  Verdict
	}{
		{"healthy", Facts{Kernel: &synced}, Verdict{Level: OK}},
		{"unsynchronised and saturated", Facts{Kernel: &kernel.Timex{Status: kernel.StatusUnsync, State: kernel.TimeError, MaxError: 16 * time.Second}},
			Verdict{Level: Critical, Findings: []Finding{
				{Critical, "the kernel's maximum error is saturated at 16s: no time daemon has disciplined the clock since boot or since the clock was last set, or not for at least 8h53m0s; is chronyd or ntpd running?"},
			}}},
		{"saturated 50 minutes after boot", Facts{Kernel: &kernel.Timex{Status: kernel.StatusUnsync, State: kernel.TimeError, MaxError: 16 * time.Second},
			Clocks: &kernel.Sample{Boot: int64(50 * time.Minute)}},
			Verdict{Level: Critical, Findings: []Finding{
				{Critical, "the kernel's maximum error is saturated at 16s: no time daemon has disciplined the clock since boot (up 50m0s) or since the clock was last set; is chronyd or ntpd running?"},
			}}},
		{"chronyd synchronised without rtcsync: STA_UNSYNC alone is no finding", Facts{
			Kernel:  &kernel.Timex{Status: kernel.StatusUnsync | kernel.StatusPLL, State: kernel.TimeError, MaxError: 17 * time.Millisecond},
			Sources: set(chronyR(0.0002, 0.0032, true))},
			Verdict{Level: OK}},
		{"saturated with chronyd answering: chronyd speaks for itself", Facts{
			Kernel:  &kernel.Timex{Status: kernel.StatusUnsync, State: kernel.TimeError, MaxError: 16 * time.Second},
			Sources: set(chronyR(0.0002, 0.0032, false))},
			Verdict{Level: Warning, Findings: []Finding{
				{Warning, "chrony is not synchronised to any source"},
			}}},
		{"chronyd -x: the kernel's maxerror is no finding while chronyd answers", Facts{
			Kernel:  &kernel.Timex{Status: kernel.StatusUnsync, State: kernel.TimeError, MaxError: 16 * time.Second},
			Sources: set(chronyR(0.0000002, 0.000005, true))},
			Verdict{Level: OK}},
		{"maxerror above the critical bound with ntpd answering", Facts{
			Kernel:  &kernel.Timex{State: kernel.TimeOK, MaxError: 3 * time.Second},
			Sources: set(timesource.Reading{Source: "ntpd", Found: true, Up: true, HasData: true, Synchronized: true, ErrorBound: time.Millisecond})},
			Verdict{Level: OK}},
		{"offset warning", Facts{Kernel: &kernel.Timex{State: kernel.TimeOK, Offset: -200 * time.Millisecond}},
			Verdict{Level: Warning, Findings: []Finding{{Warning, "the kernel is still correcting an offset of -200ms, above 100ms"}}}},
		{"offset critical", Facts{Kernel: &kernel.Timex{State: kernel.TimeOK, Offset: 500 * time.Millisecond}},
			Verdict{Level: Critical, Findings: []Finding{{Critical, "the kernel is still correcting an offset of 500ms, above 500ms"}}}},
		{"maxerror warning", Facts{Kernel: &kernel.Timex{State: kernel.TimeOK, MaxError: 300 * time.Millisecond}},
			Verdict{Level: Warning, Findings: []Finding{{Warning, "the kernel's maximum error is 300ms, above 250ms"}}}},
		{"leap second pending", Facts{Kernel: &kernel.Timex{State: kernel.TimeIns, Status: kernel.StatusInsert}},
			Verdict{Level: Warning, Findings: []Finding{{Warning, "a leap second will be inserted at the end of the UTC day"}}}},
		{"chrony synchronised, small offset", Facts{Kernel: &synced, Sources: set(chronyR(0.0002, 0.0032, true))}, Verdict{Level: OK}},
		{"chrony offset over 500ms (the incident)", Facts{Kernel: &synced, Sources: set(chronyR(-12.4, 12.402, true))},
			Verdict{Level: Critical, Findings: []Finding{
				{Critical, "chrony estimates this clock is off by -12.4s, above 500ms"},
				{Critical, "chrony's error bound (|offset| + dispersion + delay/2) is 12.402s, above 1s"},
			}}},
		{"each source judged and named on its own", Facts{Kernel: &synced, Sources: set(chronyR(0.0002, 0.0032, true),
			timesource.Reading{Source: "ntpd", Found: true, Up: true, HasData: true, Synchronized: true, Offset: 700 * time.Millisecond, ErrorBound: 710 * time.Millisecond})},
			Verdict{Level: Critical, Findings: []Finding{
				{Critical, "ntpd estimates this clock is off by 700ms, above 500ms"},
				{Warning, "ntpd's error bound (|offset| + dispersion + delay/2) is 710ms, above 250ms"},
			}}},
		{"chrony unsynchronised, no selectable source", Facts{Kernel: &synced, Sources: set(timesource.Reading{Source: "chrony",
			Found: true, Up: true, HasData: true, Leap: timesource.LeapUnsynchronized}),
			Notes: []timesource.Note{{Warning: true, Label: "chronyd", Text: "chronyd's only source is not selectable"}}},
			Verdict{Level: Warning, Findings: []Finding{
				{Warning, "chrony is not synchronised to any source"},
				{Warning, "chronyd's only source is not selectable"},
			}}},
		{"chronyd unreachable", Facts{Kernel: &synced, Sources: set(timesource.Reading{Source: "chrony", Err: errors.New("dial unix /run/chrony/chronyd.sock: no such file")})},
			Verdict{Level: Warning, Findings: []Finding{{Warning, "cannot read chrony: dial unix /run/chrony/chronyd.sock: no such file"}}}},
		{"audit warning and a recent step", Facts{Kernel: &synced,
			Sources: set(timesource.Reading{Source: "chrony", Err: errors.New("down")}),
			Notes: []timesource.Note{{Warning: true, Label: "chrony.conf", Text: "makestep 1 -1 lets chronyd step at any time."},
				{Label: "chrony.conf", Text: "maxslewrate 83333 ppm."}},
			RecentSteps: []RecentStep{{Step: -12400 * time.Millisecond, Ago: 90 * time.Second}}},
			Verdict{Level: Warning, Findings: []Finding{
				{Warning, "cannot read chrony: down"},
				{Warning, "makestep 1 -1 lets chronyd step at any time."},
				{Warning, "the wall clock stepped by -12.400000s 1m30s ago"},
			}}},
		{"ptp4l judged by its own microsecond thresholds (ptp.health)", Facts{Kernel: &synced, Sources: set(chronyR(0.00005, 0.0032, true),
			ptp4lR("SLAVE", 50*time.Microsecond, 2*time.Millisecond))},
			Verdict{Level: Critical, Findings: []Finding{
				{Critical, "ptp4l's error bound (|offset| + mean path delay + the grandmaster's accuracy) is 2ms, above 1ms"},
				{Warning, "ptp4l estimates this clock is off by 50µs, above 10µs"},
			}}},
		{"ptp4l UNCALIBRATED: the port state says why", Facts{Kernel: &synced, Sources: set(ptp4lR("UNCALIBRATED", 3*time.Microsecond, 8*time.Microsecond))},
			Verdict{Level: Warning, Findings: []Finding{
				{Warning, "ptp4l is not synchronised: port UNCALIBRATED, grandmaster 001122.fffe.334455 class 6, 1 step, software timestamps"},
			}}},
		{"ptp4l LISTENING: no master, no solution", Facts{Kernel: &synced, Sources: set(timesource.Reading{Source: "ptp4l", Found: true, Up: true,
			Grandmaster: "001122.fffe.334455", Detail: "port LISTENING, grandmaster itself class 255"})},
			Verdict{Level: Warning, Findings: []Finding{{Warning, "ptp4l is not synchronised: port LISTENING, grandmaster itself class 255"}}}},
		{"absent sources raise nothing", Facts{Kernel: &synced, Sources: set(
			timesource.Reading{Source: "ptp4l", Err: timesource.Absent(errors.New("ptp4l is absent: no /var/run/ptp4l"))},
			timesource.Reading{Source: "ntpd", Err: timesource.Absent(errors.New("ntpd is absent: no mode 6 answer"))})},
			Verdict{Level: OK}},
		{"probe errors are unknown", Facts{KernelErr: errors.New("adjtimex: operation not permitted")},
			Verdict{Level: Unknown, Findings: []Finding{{Unknown, "cannot read the kernel's clock state: adjtimex: operation not permitted"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, Judge(tt.facts, h)); diff != "" {
				t.Errorf("Judge() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSummary(t *testing.T) {
	t.Parallel()
	if got, want := (Verdict{}).Summary(), "OK: clock healthy"; got != want {
		t.Errorf("Summary() = %q, want %q", got, want)
	}
	v := Verdict{Level: Critical, Findings: []Finding{{Critical, "a"}, {Warning, "b"}}}
	if got, want := v.Summary(), "CRITICAL: a (+1 more)"; got != want {
		t.Errorf("Summary() = %q, want %q", got, want)
	}
}

func TestWriteGolden(t *testing.T) {
	t.Parallel()
	f := Facts{
		Clocks: &kernel.Sample{Mono: 5e9, Boot: 65e9, Real: 1_795_000_000_123_456_789, TAI: 1_795_000_037_123_457_789, Window: 1500},
		Kernel: &kernel.Timex{Status: kernel.StatusUnsync, State: kernel.TimeError, MaxError: 16 * time.Second,
			Frequency: -12.5e-6, TAI: 37 * time.Second},
	}
	f.AddSource(timesource.Reading{Source: "chrony", Found: true, Up: true, HasData: true, Synchronized: true},
		timesource.Line{Label: "chronyd", Value: "reference ntp1 (10.0.0.1), stratum 2, leap normal"})
	f.Notes = []timesource.Note{{Label: "chrony.conf", Text: "There is no rtcsync directive."}}
	var buf bytes.Buffer
	if err := Write(&buf, f, Judge(f, testThresholds())); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "status.golden", buf.Bytes())
}

// checkGolden compares got with testdata/name (rewritten with -update).
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", name, diff)
	}
}

// A source looked for and not running here (ptp4l, timesyncd on a host that
// runs neither) raises nothing; one that was found and is lost does.
func TestAbsentSourceRaisesNothing(t *testing.T) {
	t.Parallel()
	h := testThresholds()
	for _, tc := range []struct {
		name string
		r    timesource.Reading
		want int
	}{
		{"absent", timesource.Reading{Source: "ptp4l", Err: timesource.Absent(errors.New("no /var/run/ptp4l"))}, 0},
		{"lost", timesource.Reading{Source: "ptp4l", Found: true, Err: errors.New("no answer")}, 1},
		{"never answered, not absent", timesource.Reading{Source: "chrony", Err: errors.New("permission denied")}, 1},
	} {
		f := Facts{}
		f.AddSource(tc.r)
		if got := Judge(f, h).Findings; len(got) != tc.want {
			t.Errorf("%s: findings %v, want %d", tc.name, got, tc.want)
		}
	}
}

// testThresholds are the default thresholds with ptp4l's own (ptp.health's
// defaults), as the configuration gives them (config's tests check that it
// does).
func testThresholds() Thresholds {
	h := DefaultThresholds()
	h.Sources = map[string]Thresholds{"ptp4l": {OffsetWarning: 10 * time.Microsecond, OffsetCritical: 100 * time.Microsecond,
		ErrorBoundWarning: 100 * time.Microsecond, ErrorBoundCritical: time.Millisecond}}
	return h
}
