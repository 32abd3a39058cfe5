package ntpd

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/timesource"
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
		{"never answered: absent", Snapshot{Polls: 1, Err: errors.New("refused")},
			timesource.Reading{Source: "ntpd", Err: errors.New("refused")}},
		{"synchronised", Snapshot{Polls: 1, Up: true, HaveData: true, Data: Data{System: sys}},
			timesource.Reading{Source: "ntpd", Found: true, Up: true, HasData: true, Synchronized: true,
				Offset: 3 * time.Millisecond, ErrorBound: 10 * time.Millisecond, Detail: "stratum 2"}},
		{"unsynchronised: stratum 16, leap 3", Snapshot{Polls: 1, Up: true, HaveData: true, Data: Data{System: System{Leap: 3, Stratum: 16}}},
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
