package chrony

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/internal/loop"
	"github.com/clockwatch/clockwatch/internal/timesource"
)

func TestNotes(t *testing.T) {
	t.Parallel()
	snap := Snapshot{Tally: loop.Tally{Polls: 9, Up: true}, HaveData: true, Data: Data{Sources: []Source{{State: "unreach"}}},
		Audit: &Audit{MaxSlewRate: DefaultMaxSlewRate, LeapSecMode: "slew", RTCSync: true}}
	want := []timesource.Note{{Warning: true, Label: "chronyd", Text: "chronyd's only source is not selectable"},
		{Label: "chrony.conf", Text: "There is no makestep directive: chronyd corrects every offset by slewing and never steps the clock after it starts."},
		{Label: "chrony.conf", Text: "chronyd slews the clock by at most 0.0833333 s per second (maxslewrate 83333.3 ppm): correcting a 1 s offset takes at least 12 s."}}
	if diff := cmp.Diff(want, snap.Notes()); diff != "" {
		t.Errorf("Notes() (-want +got):\n%s", diff)
	}
}

func TestReading(t *testing.T) {
	t.Parallel()
	tracking := Tracking{SystemOffset: -0.002, RootDelay: 0.004, RootDispersion: 0.001}
	for _, tc := range []struct {
		name string
		snap Snapshot
		want timesource.Reading
	}{
		{"not polled yet", Snapshot{}, timesource.Reading{Source: "chrony"}},
		{"never answered: absent", Snapshot{Tally: loop.Tally{Polls: 1, Err: errors.New("no chronyd")}},
			timesource.Reading{Source: "chrony", Err: errors.New("no chronyd")}},
		{"synchronised", Snapshot{Tally: loop.Tally{Polls: 1, Up: true}, HaveData: true, Data: Data{Tracking: tracking, Sources: []Source{{State: "sync"}}}},
			timesource.Reading{Source: "chrony", Found: true, Up: true, HasData: true, Synchronized: true,
				Offset: -2 * time.Millisecond, ErrorBound: 5 * time.Millisecond, Detail: "leap status normal"}},
		{"every source lost: leap status still normal, not synchronised", Snapshot{Tally: loop.Tally{Polls: 9, Up: true}, HaveData: true,
			Data: Data{Tracking: tracking, Sources: []Source{{State: "unreach"}}}},
			timesource.Reading{Source: "chrony", Found: true, Up: true, HasData: true, Synchronized: false,
				Offset: -2 * time.Millisecond, ErrorBound: 5 * time.Millisecond, Detail: "leap status normal, no selectable source"}},
		{"leap status unsynchronised", Snapshot{Tally: loop.Tally{Polls: 1, Up: true}, HaveData: true, Data: Data{Tracking: Tracking{Leap: LeapUnsynchronised}}},
			timesource.Reading{Source: "chrony", Found: true, Up: true, HasData: true, Leap: timesource.LeapUnsynchronized,
				Detail: "leap status " + LeapUnsynchronised.String()}},
		{"lost after answering", Snapshot{Tally: loop.Tally{Polls: 5, Err: errors.New("timeout")}, HaveData: true, Data: Data{Tracking: tracking}},
			timesource.Reading{Source: "chrony", Found: true, HasData: true, Err: errors.New("timeout"), Synchronized: true,
				Offset: -2 * time.Millisecond, ErrorBound: 5 * time.Millisecond, Detail: "leap status normal"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := tc.snap.Reading()
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b error) bool {
				return (a == nil) == (b == nil) && (a == nil || a.Error() == b.Error())
			})); diff != "" {
				t.Errorf("Reading() (-want +got):\n%s", diff)
			}
			if got != tc.want && got.Err == nil { // a Reading stays a comparable value
				t.Errorf("Reading() = %+v, want %+v", got, tc.want)
			}
			if tc.name == "not polled yet" && !got.Pending() {
				t.Error("a chronyd not polled yet is not pending")
			}
		})
	}
}
