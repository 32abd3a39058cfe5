package ntpd

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/internal/loop"
	"github.com/clockwatch/clockwatch/internal/timesource"
)

func TestReading(t *testing.T) {
	t.Parallel()
	sys := System{Leap: 0, Stratum: 2, Offset: 0.003, RootDelay: 0.01, RootDispersion: 0.002}
	for _, tc := range []struct {
		name string
		snap Snapshot
		want timesource.Reading
	}{
		{"not polled yet", Snapshot{}, timesource.Reading{Source: "ntpd"}},
		{"never answered: absent", Snapshot{Tally: loop.Tally{Polls: 1, Err: errors.New("refused")}},
			timesource.Reading{Source: "ntpd", Err: errors.New("refused")}},
		{"synchronised", Snapshot{Tally: loop.Tally{Polls: 1, Up: true}, HaveData: true, Data: Data{System: sys}},
			timesource.Reading{Source: "ntpd", Found: true, Up: true, HasData: true, Synchronized: true,
				Offset: 3 * time.Millisecond, ErrorBound: 10 * time.Millisecond, Detail: "stratum 2"}},
		{"unsynchronised: stratum 16, leap 3", Snapshot{Tally: loop.Tally{Polls: 1, Up: true}, HaveData: true, Data: Data{System: System{Leap: 3, Stratum: 16}}},
			timesource.Reading{Source: "ntpd", Found: true, Up: true, HasData: true, Leap: timesource.LeapUnsynchronized, Detail: "stratum 16"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := tc.snap.Reading()
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b error) bool {
				return (a == nil) == (b == nil) && (a == nil || a.Error() == b.Error())
			})); diff != "" {
				t.Errorf("Reading() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStatusLines(t *testing.T) {
	t.Parallel()
	d := Data{System: System{Version: "ntpsec-1.2.2", Stratum: 2, RefID: "10.0.0.1", Offset: -0.0021, RootDelay: 0.004, RootDispersion: 0.03},
		Peers: []Peer{{Address: "10.0.0.1", Selection: "sys.peer", Stratum: 1, Reach: 0o377}, {Address: "10.0.0.2", Selection: "candidate"}}}
	var got []string
	for _, l := range d.StatusLines() {
		got = append(got, l.Label+": "+l.Value)
	}
	want := []string{
		"ntpd: ntpsec-1.2.2, stratum 2, reference 10.0.0.1, leap none, synchronised true",
		"ntpd offset: -0.002100000 seconds (positive: this clock is ahead)",
		"ntpd bound: 0.034100000 seconds (|offset| + root dispersion 0.030000000 + root delay 0.004000000 / 2)",
		"ntpd sys.peer: 10.0.0.1 (stratum 1, reach 377), 2 associations",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("StatusLines (-want +got):\n%s", diff)
	}
}
