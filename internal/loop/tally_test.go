package loop

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/clockwatch/clockwatch/internal/timesource"
)

// TestCount: a failure is news after an up poll and after none; a poll of a
// source not known to be there fails without counting a Failure.
func TestCount(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	bad := errors.New("refused")
	type poll struct {
		err    error
		absent bool
	}
	for _, tc := range []struct {
		name      string
		polls     []poll
		wantWasUp []bool
		want      Tally
	}{
		{"first poll fails", []poll{{err: bad}}, []bool{true},
			Tally{Err: bad, PollDuration: time.Second, Polls: 1, Failures: 1}},
		{"up, down, down, up", []poll{{}, {err: bad}, {err: bad}, {}}, []bool{true, true, false, false},
			Tally{Up: true, LastSuccess: t0.Add(4 * time.Second), PollDuration: time.Second, Polls: 4, Failures: 2}},
		{"absent, then answers", []poll{{err: bad, absent: true}, {}}, []bool{true, false},
			Tally{Up: true, LastSuccess: t0.Add(2 * time.Second), PollDuration: time.Second, Polls: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got Tally
			var wasUp []bool
			for i, p := range tc.polls {
				start := t0.Add(time.Duration(i) * time.Second)
				if p.absent {
					wasUp = append(wasUp, got.CountAbsent(start, start.Add(time.Second), p.err))
				} else {
					wasUp = append(wasUp, got.Count(start, start.Add(time.Second), p.err))
				}
			}
			if diff := cmp.Diff(tc.wantWasUp, wasUp); diff != "" {
				t.Errorf("wasUp (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateErrors()); diff != "" {
				t.Errorf("tally (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLatest: readers see a whole update or none of it.
func TestLatest(t *testing.T) {
	t.Parallel()
	var l Latest[[2]int]
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 1000 {
			l.Update(func(v *[2]int) { v[0], v[1] = i, i })
		}
	}()
	for {
		select {
		case <-done:
			if got := l.Load(); got != [2]int{999, 999} {
				t.Fatalf("last value %v, want [999 999]", got)
			}
			return
		default:
		}
		if v := l.Load(); v[0] != v[1] {
			t.Fatalf("torn value %v", v)
		}
	}
}

// TestTimed: the poll gets the deadline, and start and end come from the
// clock given.
func TestTimed(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	clock := t0
	now := func() time.Time { clock = clock.Add(time.Second); return clock }
	v, start, end, err := Timed(context.Background(), time.Hour, now, func(ctx context.Context) (int, error) {
		if _, ok := ctx.Deadline(); !ok {
			return 0, errors.New("no deadline")
		}
		return 7, nil
	})
	if v != 7 || err != nil || !start.Equal(t0.Add(time.Second)) || !end.Equal(t0.Add(2*time.Second)) {
		t.Errorf("Timed = %v, %v, %v, %v; want 7, +1 s, +2 s, nil", v, start.Sub(t0), end.Sub(t0), err)
	}
}

// TestTallyReading: the reading carries the tally's outcome, the found and
// data flags given, and the silent error only for a polled source that is
// down without an error of its own.
func TestTallyReading(t *testing.T) {
	t.Parallel()
	at := time.Unix(2000, 0)
	bad, silent := errors.New("refused"), errors.New("did not answer")
	for _, tc := range []struct {
		name          string
		tally         Tally
		found, data   bool
		silent        error
		wantUp        bool
		wantErr       error
		wantSuccessAt time.Time
	}{
		{"never polled", Tally{}, false, false, silent, false, nil, time.Time{}},
		{"up", Tally{Up: true, LastSuccess: at, Polls: 3}, true, true, silent, true, nil, at},
		{"down with its error", Tally{Err: bad, LastSuccess: at, Polls: 4, Failures: 1}, true, true, silent, false, bad, at},
		{"down without an error", Tally{Polls: 2}, true, false, silent, false, silent, time.Time{}},
		{"down without an error, no silent error", Tally{Polls: 2}, true, false, nil, false, nil, time.Time{}},
	} {
		r := tc.tally.Reading("src", timesource.SecondOpinion, tc.found, tc.data, tc.silent)
		if r.Source != "src" || r.Role != timesource.SecondOpinion || r.Found != tc.found || r.HasData != tc.data ||
			r.Up != tc.wantUp || r.Err != tc.wantErr || !r.LastSuccess.Equal(tc.wantSuccessAt) {
			t.Errorf("%s: Reading = %+v, want source src, second opinion, found %v, data %v, up %v, err %v, last success %v",
				tc.name, r, tc.found, tc.data, tc.wantUp, tc.wantErr, tc.wantSuccessAt)
		}
	}
}
