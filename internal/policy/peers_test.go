package policy

import (
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/clockwatch/clockwatch/stepdown"
)

// fleet is a reading of the peers source: the majority judge's verdict
// (decided), or, with fewer than two peers measured, none (down).
func fleet(at float64, decided, outside bool) in {
	r := timesource.Reading{Source: "peers", Role: timesource.SecondOpinion, Found: true, JudgesFleet: true}
	if decided {
		r.Up, r.HasData, r.Synchronized, r.OutsideFleet = true, true, true, outside
		r.Detail = "2 of 2 peers more than 100ms off"
	} else {
		r.Err = errorString("1 of 2 peers measured")
	}
	return reading(at, r)
}

type errorString string

func (e errorString) Error() string { return string(e) }

func TestPeerOffset(t *testing.T) {
	t.Parallel()
	base := Config{HoldDown: 30 * time.Second, Triggers: DefaultTriggers()} // peer_offset: grace 10s
	off := base
	off.Triggers.PeerOffset.Enabled = false
	await := []string{"clocks", "chrony"}
	start := []in{probeOK(0, "clocks"), chrony(0.1, true, 0, 0.01), fleet(0.2, true, false)}
	for _, tc := range []struct {
		name      string
		cfg       Config
		inputs    []in
		want      []string
		wantState stepdown.State
	}{
		{
			name:      "inside: nothing",
			cfg:       base,
			inputs:    append(start, fleet(5, true, false), fleet(10, true, false), tick(100)),
			want:      []string{"resume/starting@0.1s"},
			wantState: stepdown.StateOK,
		},
		{
			name:      "outside for longer than the grace: stepdown; inside again: resume after the hold-down and fresh readings",
			cfg:       base,
			inputs:    append(start, fleet(5, true, true), fleet(10, true, true), tick(15), tick(15.1), fleet(20, true, false), tick(49), chrony(50, true, 0, 0.01), fleet(50.1, true, false)),
			want:      []string{"resume/starting@0.1s", "stepdown/peer_offset@15.1s", "resume/peer_offset@50s"},
			wantState: stepdown.StateOK,
		},
		{
			name:      "one round outside, the next inside: no stepdown (the grace)",
			cfg:       base,
			inputs:    append(start, fleet(5, true, true), fleet(10, true, false), tick(15.1), tick(100)),
			want:      []string{"resume/starting@0.1s"},
			wantState: stepdown.StateOK,
		},
		{
			name:      "undecided decides nothing: a stepdown holds while the node cannot measure two peers",
			cfg:       base,
			inputs:    append(start, fleet(5, true, true), tick(15.1), fleet(20, false, false), fleet(60, false, false), chrony(60, true, 0, 0.01), tick(100)),
			want:      []string{"resume/starting@0.1s", "stepdown/peer_offset@15.1s"},
			wantState: stepdown.StateStepdown,
		},
		{
			name:      "undecided decides nothing: no stepdown while outside cannot be seen",
			cfg:       base,
			inputs:    append(start, fleet(5, false, false), fleet(50, false, false), tick(100)),
			want:      []string{"resume/starting@0.1s"},
			wantState: stepdown.StateOK,
		},
		{
			name:      "disabled: nothing",
			cfg:       off,
			inputs:    append(start, fleet(5, true, true), fleet(20, true, true), tick(100)),
			want:      []string{"resume/starting@0.1s"},
			wantState: stepdown.StateOK,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := New(tc.cfg, 0)
			p.Await(await...)
			got := feed(t, p, tc.inputs, tc.want, tc.wantState)
			for _, e := range got {
				if e.Reason == stepdown.ReasonPeerOffset && e.Type == stepdown.TypeStepdown &&
					(e.Source != "peers" || !strings.Contains(e.Detail, "disagrees with the majority of its peers (2 of 2 peers more than 100ms off) for 10.1s")) {
					t.Errorf("event %+v", e)
				}
			}
		})
	}
}

// TestPeerOffsetReload: turning the trigger off drops its condition.
func TestPeerOffsetReload(t *testing.T) {
	t.Parallel()
	cfg := Config{HoldDown: time.Second, Triggers: DefaultTriggers()}
	p := New(cfg, 0)
	p.Await("clocks")
	feed(t, p, []in{probeOK(0, "clocks"), fleet(1, true, true), tick(11.5)}, []string{"resume/starting@0s", "stepdown/peer_offset@11.5s"}, stepdown.StateStepdown)
	cfg.Triggers.PeerOffset.Enabled = false
	p.SetConfig(cfg)
	if cs := p.Conditions(); len(cs) != 0 {
		t.Errorf("conditions after disabling the trigger: %v", cs)
	}
}
