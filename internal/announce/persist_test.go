package announce

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/internal/policy"
	"github.com/clockwatch/clockwatch/stepdown"
)

func fakeBoot(id string, suspended time.Duration) Boot {
	return func() (string, time.Duration, error) { return id, suspended, nil }
}

func TestStateRoundTrip(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), StateFile)
	ps := policy.Persisted{State: stepdown.StateStepdown, Reason: stepdown.ReasonStep, HoldUntil: 90 * time.Second,
		Conditions: []policy.Condition{{Reason: stepdown.ReasonOffset, Source: "chrony"}}, Known: []string{"chrony", "kernel"}}
	if err := saveState(path, ps, fakeBoot("b1", 0)); err != nil {
		t.Fatal(err)
	}
	// Suspended 5 s since: BOOTTIME went on, CLOCK_MONOTONIC did not, so
	// the deadline is 5 s nearer in monotonic time.
	got, ok, err := loadState(path, fakeBoot("b1", 5*time.Second))
	if err != nil || !ok {
		t.Fatalf("loadState: %v, %v", ok, err)
	}
	want := ps
	want.HoldUntil = 85 * time.Second
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("loaded (-want +got):\n%s", diff)
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Errorf("directory holds %d entries after an atomic write, want 1", len(ents))
	}
	// After a reboot nothing carries over.
	if _, ok, err := loadState(path, fakeBoot("b2", 0)); ok || err != nil {
		t.Errorf("loadState in another boot: %v, %v; want nothing, no error", ok, err)
	}
	if _, ok, err := loadState(filepath.Join(t.TempDir(), StateFile), fakeBoot("b1", 0)); ok || err != nil {
		t.Errorf("loadState of no file: %v, %v; want nothing, no error", ok, err)
	}
}

func TestBadStateFiles(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, content, want string }{
		{"truncated", `{"version":1,"boot_id":"b1","sta`, "is corrupt (unexpected end of JSON input)"},
		{"not json", "\x00\x01garbage", "is corrupt"},
		{"version", `{"version":7,"boot_id":"b1"}`, "has version 7, want 1"},
		{"state", `{"version":1,"boot_id":"b1","state":"maybe"}`, `unknown state "maybe"`},
		{"no reason", `{"version":1,"boot_id":"b1","state":"stepdown"}`, "state stepdown without a reason"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), StateFile)
			os.WriteFile(path, []byte(tc.content), 0o600)
			_, ok, err := loadState(path, fakeBoot("b1", 0))
			if ok || err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("loadState: %v, %v; want an error naming %s and saying %q", ok, err, path, tc.want)
			}
			// The announcer starts anyway, without the state, and says why.
			var log bytes.Buffer
			s := New(testPolicy(), Options{StatePath: path, Boot: fakeBoot("b1", 0), Logger: slog.New(slog.NewTextHandler(&log, nil))})
			defer s.Close()
			if st := s.Latest().Status; st.State != stepdown.StateUnknown {
				t.Errorf("state %s after a bad state file, want unknown", st.State)
			}
			if !strings.Contains(log.String(), "cannot restore the stepdown state") {
				t.Errorf("log %q does not say the state was not restored", log.String())
			}
		})
	}
}

// testPolicy is the default policy: a 30 s hold-down and the default
// triggers.
func testPolicy() policy.Config {
	return policy.Config{HoldDown: 30 * time.Second, Triggers: policy.DefaultTriggers()}
}

// TestAnnouncerKeepsState runs the state through two announcers (processes)
// in one boot and a third in the next boot.
func TestAnnouncerKeepsState(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), StateFile)
	mono := time.Duration(100 * time.Second)
	opts := Options{StatePath: path, Boot: fakeBoot("b1", 0), Mono: func() time.Duration { return mono }}
	cfg := testPolicy()
	s := New(cfg, opts)
	s.ProbeOK("clocks")
	s.Step(policy.Step{Seconds: 2})
	if st := s.Latest().Status; st.State != stepdown.StateStepdown {
		t.Fatalf("state %s after a step", st.State)
	}
	mono += 10 * time.Second
	s2 := New(cfg, opts)
	if st := s2.Latest().Status; st.State != stepdown.StateStepdown || st.Reason != stepdown.ReasonStep {
		t.Fatalf("restored %+v, want stepdown step", st)
	}
	s2.ProbeOK("clocks")
	mono += 19 * time.Second // 29 s after the step: the 30 s hold-down is not over
	s2.Tick()
	if st := s2.Latest().Status; st.State != stepdown.StateStepdown {
		t.Fatalf("resumed 29 s after the step with a 30 s hold-down")
	}
	mono += time.Second
	s2.Tick()
	if st := s2.Latest().Status; st.State != stepdown.StateOK {
		t.Fatalf("state %s at the end of the hold-down, want ok", st.State)
	}
	s.Step(policy.Step{Seconds: 2}) // s's state file again: stepdown
	s3 := New(cfg, Options{StatePath: path, Boot: fakeBoot("b2", 0), Mono: opts.Mono})
	if st := s3.Latest().Status; st.State != stepdown.StateUnknown {
		t.Errorf("state %s after a reboot, want unknown", st.State)
	}
}

// BenchmarkSaveState measures one write of stepdown.json (temp file, fsync,
// rename, fsync of the directory): paid only when the state changes.
func BenchmarkSaveState(b *testing.B) {
	path := filepath.Join(b.TempDir(), StateFile)
	ps := policy.Persisted{State: stepdown.StateStepdown, Reason: stepdown.ReasonOffset, Known: []string{"chrony", "kernel"},
		Conditions: []policy.Condition{{Reason: stepdown.ReasonOffset, Source: "chrony"}}}
	for b.Loop() {
		if err := saveState(path, ps, fakeBoot("b1", 0)); err != nil {
			b.Fatal(err)
		}
	}
}
