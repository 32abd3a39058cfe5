package timesource

import (
	"strings"
	"testing"
	"time"
)

func TestCommon(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	ok := Common{Mode: ModeAuto, Role: "authoritative", PollInterval: time.Second, Timeout: 500 * time.Millisecond}
	with := func(f func(*Common)) Common { c := ok; f(&c); return c }
	limits := Limits{MinPoll: 100 * time.Millisecond, MaxPoll: time.Hour, Why: "each poll is a round of requests"}
	for _, tc := range []struct {
		name       string
		c          Common
		l          Limits
		on, pinned bool
		role       Role
		wantErrs   []string
	}{
		{name: "the defaults", c: ok, l: limits, on: true},
		{name: "zero: off", c: Common{}, l: Limits{NoTimeout: true}, wantErrs: []string{`x.mode: must be auto, on or off, got ""`, `x.role: must be`}},
		{name: "on", c: with(func(c *Common) { c.Mode = ModeOn }), l: limits, on: true, pinned: true},
		{name: "off", c: with(func(c *Common) { c.Mode = ModeOff }), l: limits},
		{name: "enabled: false is off", c: with(func(c *Common) { c.Enabled = &no }), l: limits},
		{name: "enabled: true keeps the mode", c: with(func(c *Common) { c.Enabled, c.Mode = &yes, ModeOn }), l: limits, on: true, pinned: true},
		{name: "enabled: false, mode: on", c: with(func(c *Common) { c.Enabled, c.Mode = &no, ModeOn }), l: limits,
			wantErrs: []string{"x.enabled: false contradicts x.mode: on (enabled is the older spelling of mode: give one of them)"}},
		{name: "enabled: true, mode: off", c: with(func(c *Common) { c.Enabled, c.Mode = &yes, ModeOff }), l: limits,
			wantErrs: []string{"x.enabled: true contradicts x.mode: off"}},
		{name: "second opinion", c: with(func(c *Common) { c.Role = "second_opinion" }), l: limits, on: true, role: SecondOpinion},
		{name: "poll interval out of bounds", c: with(func(c *Common) { c.PollInterval = 2 * time.Hour }), l: limits, on: true,
			wantErrs: []string{"x.poll_interval: must be between 100ms and 1h (each poll is a round of requests), got 2h0m0s"}},
		{name: "timeout over the poll interval", c: with(func(c *Common) { c.Timeout = 2 * time.Second }), l: limits, on: true,
			wantErrs: []string{"x.timeout: must not exceed x.poll_interval (1s), got 2s"}},
		{name: "no timeout wanted", c: with(func(c *Common) { c.Timeout = time.Second }), l: Limits{MinPoll: time.Millisecond, MaxPoll: 10 * time.Second, NoTimeout: true}, on: true,
			wantErrs: []string{"x.timeout: must be 0: a poll of x does not wait, got 1s"}},
	} {
		if got := tc.c.On(); got != tc.on {
			t.Errorf("%s: On() = %v, want %v", tc.name, got, tc.on)
		}
		if got := tc.c.Pinned(); got != tc.pinned {
			t.Errorf("%s: Pinned() = %v, want %v", tc.name, got, tc.pinned)
		}
		if got := tc.c.SourceRole(); got != tc.role {
			t.Errorf("%s: SourceRole() = %v, want %v", tc.name, got, tc.role)
		}
		err := tc.c.Validate("x", tc.l)
		var got []string
		if err != nil {
			got = strings.Split(err.Error(), "\n")
		}
		if len(got) != len(tc.wantErrs) {
			t.Errorf("%s: Validate() = %q, want %d errors %q", tc.name, got, len(tc.wantErrs), tc.wantErrs)
			continue
		}
		for i, want := range tc.wantErrs {
			if !strings.HasPrefix(got[i], want) {
				t.Errorf("%s: error %d = %q, want %q", tc.name, i, got[i], want)
			}
		}
		c := tc.c
		if c.Fold(); c.Enabled != nil || c.On() != tc.on {
			t.Errorf("%s: Fold() = %+v: want enabled folded into the same on/off", tc.name, c)
		}
	}
}

// Turn is a --[no-]collector switch: off is mode off, on brings an off
// source back to auto and leaves on as it was.
func TestCommonTurn(t *testing.T) {
	t.Parallel()
	no := false
	for _, tc := range []struct {
		from Common
		on   bool
		want string
	}{
		{Common{Mode: ModeOn}, false, ModeOff},
		{Common{Mode: ModeOff}, true, ModeAuto},
		{Common{Mode: ModeAuto, Enabled: &no}, true, ModeAuto},
		{Common{Mode: ModeOn}, true, ModeOn},
	} {
		c := tc.from
		if err := c.Turn(tc.on); err != nil || c.Mode != tc.want || c.Enabled != nil || c.On() != tc.on {
			t.Errorf("%+v.Turn(%v) = %+v, %v: want mode %s", tc.from, tc.on, c, err, tc.want)
		}
	}
}

// TestAuto: the defaults' Common is mode auto with the role, poll interval
// and timeout given, and on.
func TestAuto(t *testing.T) {
	t.Parallel()
	c := Auto(SecondOpinion, 2*time.Second, time.Second)
	want := Common{Mode: ModeAuto, Role: "second_opinion", PollInterval: 2 * time.Second, Timeout: time.Second}
	if c.Mode != want.Mode || c.Enabled != nil || c.Role != want.Role || c.PollInterval != want.PollInterval || c.Timeout != want.Timeout {
		t.Errorf("Auto(SecondOpinion, 2s, 1s) = %+v, want %+v", c, want)
	}
	if !c.On() || c.Pinned() || c.SourceRole() != SecondOpinion {
		t.Errorf("Auto(...): On %v, Pinned %v, SourceRole %v; want on, not pinned, second opinion", c.On(), c.Pinned(), c.SourceRole())
	}
}
