package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

// TestStepdownSection: the stepdown section reads the socket's keys and the
// policy's (hold_down, triggers) under one key, strictly, into their own
// types.
func TestStepdownSection(t *testing.T) {
	t.Parallel()
	const doc = `
socket: /run/clockwatch/other.sock
mode: "0600"
heartbeat: 500ms
hold_down: 1m
max_clients: 100
queue_size: 16
drill_uids: [1000]
triggers:
  step: {enabled: true, threshold: 5ms}
  offset: {enabled: false}
  unsynchronized: {grace: 2m}
`
	sd := DefaultStepdown()
	dec := yaml.NewDecoder(strings.NewReader(doc))
	dec.KnownFields(true)
	if err := dec.Decode(&sd); err != nil {
		t.Fatal(err)
	}
	if err := sd.Validate(); err != nil {
		t.Fatal(err)
	}
	want := DefaultStepdown()
	want.Socket, want.Mode = "/run/clockwatch/other.sock", "0600"
	want.Heartbeat, want.MaxClients, want.QueueSize = 500*time.Millisecond, 100, 16
	want.DrillUIDs = []uint32{1000}
	want.Policy.HoldDown = time.Minute
	want.Policy.Triggers.Step.Threshold = 5 * time.Millisecond
	want.Policy.Triggers.Offset.Enabled = false
	want.Policy.Triggers.Unsynchronized.Grace = 2 * time.Minute
	if diff := cmp.Diff(want, sd); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	dec = yaml.NewDecoder(strings.NewReader("hold_down: 1m\nhold_dwon: 2m\n"))
	dec.KnownFields(true)
	if err := dec.Decode(&sd); err == nil || !strings.Contains(err.Error(), "hold_dwon") {
		t.Errorf("an unknown key beside the policy's: %v, want an error naming it", err)
	}
}

func TestStepdownValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		edit func(*Stepdown)
		want string
	}{
		{"hold_down", func(c *Stepdown) { c.Policy.HoldDown = -time.Second }, "stepdown.hold_down: must be between 0s and 24h0m0s, got -1s"},
		{"hold_down a year", func(c *Stepdown) { c.Policy.HoldDown = 365 * 24 * time.Hour }, "stepdown.hold_down: must be between 0s and 24h0m0s, got 8760h0m0s"},
		{"trigger", func(c *Stepdown) { c.Policy.Triggers.Offset.Threshold = 0 }, "stepdown.triggers.offset.threshold: must be positive when enabled, got 0s"},
		{"the socket's too", func(c *Stepdown) { c.Heartbeat = 0 }, "stepdown.heartbeat: must be between 10ms and 1h0m0s (each beat is a write to every client), got 0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sd := DefaultStepdown()
			tc.edit(&sd)
			if err := sd.Validate(); err == nil || err.Error() != tc.want {
				t.Errorf("got %v\nwant %s", err, tc.want)
			}
		})
	}
}
