package step

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestEventJSONRoundTrip(t *testing.T) {
	t.Parallel()
	wall := time.Date(2026, 11, 30, 3, 12, 0, 123456789, time.UTC)
	for _, e := range []Event{
		{Type: TypeStep, Seq: 7, Epoch: 3, Step: -12400 * time.Millisecond, Seen: SeenBoth, Delay: 41800 * time.Nanosecond,
			Mono: 4713030055000, WallBefore: wall.Add(12400 * time.Millisecond), WallAfter: wall, Uncertainty: 3600 * time.Nanosecond},
		{Type: TypeStep, Seq: 8, Epoch: 4, Step: -time.Second, Leap: true, Seen: SeenSampling, Delay: 100 * time.Millisecond,
			WallBefore: wall.Add(time.Second), WallAfter: wall},
		{Type: TypeWake, Seq: 9, Epoch: 4, Seen: SeenBoth, Suspended: 8 * time.Hour, WallBefore: wall, WallAfter: wall},
		{Type: TypeClockSet, Seq: 10, Epoch: 4, Seen: SeenClockSet, Step: 3 * time.Microsecond},
	} {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(b) {
			t.Fatalf("invalid JSON %s", b)
		}
		var back Event
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("Unmarshal(%s) = %v", b, err)
		}
		if diff := cmp.Diff(e, back); diff != "" {
			t.Errorf("round trip of %s (-want +got):\n%s", b, diff)
		}
	}
}

func TestEventJSONFields(t *testing.T) {
	t.Parallel()
	e := Event{Type: TypeStep, Seq: 1, Epoch: 2, Step: -12400 * time.Millisecond, Seen: SeenBoth, Mono: 5}
	want := `{"type":"step","seq":1,"epoch":2,"step_seconds":-12.4,"seen":"both","delay_seconds":0,"mono_ns":5,"uncertainty_seconds":0}`
	if got := string(e.AppendJSON(nil)); got != want {
		t.Errorf("AppendJSON = %s\nwant          %s", got, want)
	}
	var bad Event
	if err := json.Unmarshal([]byte(`{"type":"jump","seen":"both"}`), &bad); err == nil {
		t.Error("unknown type accepted")
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	mod := func(f func(*Config)) Config { c := DefaultConfig(); f(&c); return c }
	for _, tc := range []struct {
		name string
		c    Config
		want string
	}{
		{"defaults", DefaultConfig(), ""},
		{"zero interval", mod(func(c *Config) { c.Interval = 0 }), "clock.sample_interval: must be positive, got 0s"},
		{"long interval", mod(func(c *Config) { c.Interval = time.Hour }), "clock.sample_interval: must be at most 1m, got 1h0m0s"},
		{"negative slew", mod(func(c *Config) { c.MaxSlewRate = -1 }), "step.max_slew_rate: must be a ratio between 0 and 0.5 (0.083333 is 83,333 ppm), got -1"},
		{"ppm not ratio", mod(func(c *Config) { c.MaxSlewRate = 500 }), "step.max_slew_rate: must be a ratio between 0 and 0.5 (0.083333 is 83,333 ppm), got 500"},
		{"negative min step", mod(func(c *Config) { c.MinStep = -1 }), "step.min_step: must not be negative, got -1ns"},
		{"huge min step", mod(func(c *Config) { c.MinStep = time.Minute }), "step.min_step: must be at most 1s, got 1m0s"},
		{"short slew window", mod(func(c *Config) { c.SlewWindow = time.Millisecond }), "step.slew_window: must be at least clock.sample_interval (100ms), got 1ms"},
	} {
		got := ""
		if err := tc.c.Validate(); err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%s: Validate() = %q, want %q", tc.name, got, tc.want)
		}
	}
}
