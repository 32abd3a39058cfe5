package chrony

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/chronydtest"
	"github.com/clockwatch/clockwatch/internal/loop"
	"github.com/clockwatch/clockwatch/internal/timesource"
)

// TestBackoffPast31Failures: with chrony.poll_interval 9 s the back-off
// lo<<min(n-1, 30) wrapped negative at the 31st failed poll, and the poller
// spun at 100 % of a core for good (issue 24, item 5). Run to the 31st
// failure and beyond: every wait is within [poll_interval,
// max_poll_interval].
func TestBackoffPast31Failures(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.PollInterval, cfg.MaxPollInterval = 9*time.Second, time.Hour
	d := &replayDialer{dir: "testdata/unix-synced", dialErr: errors.New("chronyd is not running")}
	p := newPoller(cfg, newClient(d, time.Second, nil), nil)
	for n := 1; n <= 40; n++ {
		p.Poll(context.Background())
		w := p.next(time.Now())
		if w < cfg.PollInterval || w > cfg.MaxPollInterval {
			t.Fatalf("wait after failed poll %d: %v, want within [%v, %v]", n, w, cfg.PollInterval, cfg.MaxPollInterval)
		}
		if n >= 10 && w != cfg.MaxPollInterval {
			t.Errorf("wait after failed poll %d: %v, want the longest (%v)", n, w, cfg.MaxPollInterval)
		}
	}
	// The overdue back-off (chronyd answers, its update is late) has the
	// same shape.
	d.dialErr = nil
	p.Poll(context.Background())
	for n := 1; n <= 40; n++ {
		if w := p.next(time.Now().Add(1000 * time.Hour)); w < cfg.PollInterval || w > cfg.MaxPollInterval {
			t.Fatalf("overdue wait %d: %v, want within [%v, %v]", n, w, cfg.PollInterval, cfg.MaxPollInterval)
		}
	}
}

// TestTrackingFigures: chronyd's root dispersion 1e10 s or 4.6e18 s read as
// an error bound under 1 s (a wrapping conversion), and -1000 s passed
// "bound > threshold" (issue 24, item 2). Huge figures saturate, negative
// ones make the poll fail.
func TestTrackingFigures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		tr        Tracking
		wantBound time.Duration
		wantOff   time.Duration
		wantErr   string
	}{
		{name: "root dispersion 1e10 s", tr: Tracking{RootDispersion: 1e10}, wantBound: timesource.Saturated},
		{name: "root dispersion 4.6e18 s", tr: Tracking{RootDispersion: 4.6e18}, wantBound: timesource.Saturated},
		{name: "offset +1e10 s", tr: Tracking{SystemOffset: 1e10}, wantOff: timesource.Saturated, wantBound: timesource.Saturated},
		{name: "root dispersion -1000 s", tr: Tracking{RootDispersion: -1000}, wantErr: "root dispersion is -1000 s, below zero"},
		{name: "root delay -1 s", tr: Tracking{RootDelay: -1}, wantErr: "root delay is -1 s, below zero"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.tr.check()
			s := Snapshot{HaveData: true, Tally: loop.Tally{Up: true, Polls: 1, LastSuccess: time.Now()}, Data: Data{Tracking: tc.tr}}
			r := s.Reading()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("check: %v, want %q", err, tc.wantErr)
				}
				if r.Up || r.HasData {
					t.Errorf("reading %+v, want a failed poll without data", r)
				}
				return
			}
			if err != nil {
				t.Fatalf("check: %v", err)
			}
			if r.ErrorBound != tc.wantBound || r.Offset != tc.wantOff || !r.Up {
				t.Errorf("reading offset %v bound %v up %v, want %v, %v, up", r.Offset, r.ErrorBound, r.Up, tc.wantOff, tc.wantBound)
			}
		})
	}
}

// TestTrackingReferenceTimeFigures: a reference time of 2^40 s was exported
// as -7.29e9 (UnixNano wraps past 2262; issue 32, item 6). One outside
// 1970–2262 makes the poll fail; 0, what chronyd says before its first
// update, is fine.
func TestTrackingReferenceTimeFigures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ref     time.Time
		wantErr string
	}{
		{time.Unix(1<<40, 0), "reference time is 1099511627776 s after 1970, outside 1970–2262"},
		{time.Unix(-1, 0), "reference time is -1 s after 1970"},
		{time.Unix(0, 0), ""},
		{time.Unix(1_800_000_000, 5), ""},
	} {
		err := Tracking{RefTime: tc.ref}.check()
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("reference time %v: %v, want %q", tc.ref.Unix(), err, tc.wantErr)
		}
	}
}

// TestFakeChronydFigures: a fake chronyd on a unix socket replays the
// captured replies with the tracking report's root dispersion changed: 1e10
// s and chrony's largest float (about 4.6e18 s) saturate the error bound,
// -1000 s fails the poll. Before, each read as "ok".
func TestFakeChronydFigures(t *testing.T) {
	t.Parallel()
	replies, err := chronydtest.LoadReplies("testdata/unix-synced")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		disp    float64
		refHigh uint32 // the reference time's high 32 bits of seconds
		wantErr string
	}{
		{name: "1e10 s", disp: 1e10},
		{name: "4.6e18 s", disp: chronydtest.MaxFloat},
		{name: "-1000 s", disp: -1000, wantErr: "root dispersion is -1000 s, below zero"},
		{name: "reference time 2^40 s", disp: 0.001, refHigh: 1 << 8, wantErr: "chronyd's reference time is 1099511627776 s after 1970"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := chronydtest.StartFake(t, replies)
			f.Edit("tracking", func(b []byte) {
				chronydtest.Float(b, chronydtest.TrackingRootDispersion, tc.disp)
				if tc.refHigh != 0 {
					binary.BigEndian.PutUint32(b[chronydtest.TrackingRefTime:], tc.refHigh)
					binary.BigEndian.PutUint32(b[chronydtest.TrackingRefTime+4:], 0)
				}
			})
			cfg := DefaultConfig()
			cfg.Address, cfg.ReplySocketDir = f.Socket, t.TempDir()
			p := NewPoller(cfg, nil)
			defer p.client.Close()
			p.Poll(context.Background())
			s, r := p.Snapshot(), p.Reading()
			if tc.wantErr != "" {
				if s.Up || s.Err == nil || !strings.Contains(s.Err.Error(), tc.wantErr) || r.Up {
					t.Errorf("poll: up %v, err %v; want a failure saying %q", s.Up, s.Err, tc.wantErr)
				}
				return
			}
			if !s.Up {
				t.Fatalf("poll: %v", s.Err)
			}
			if got := s.Data.Tracking.RootDispersion; got < tc.disp*0.999 || got > tc.disp*1.001 {
				t.Errorf("root dispersion decoded as %v, want %v", got, tc.disp)
			}
			if r.ErrorBound != timesource.Saturated || !r.Up {
				t.Errorf("reading %+v, want the bound saturated", r)
			}
		})
	}
}
