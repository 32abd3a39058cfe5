package health_test

import (
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/health"
	"github.com/clockwatch/clockwatch/internal/kernel"
	"github.com/clockwatch/clockwatch/internal/policy"
	"github.com/clockwatch/clockwatch/internal/transport/socket"
)

func TestNobodyDisciplines(t *testing.T) {
	t.Parallel()
	saturated := &kernel.Timex{MaxError: kernel.MaxErrorSaturated, Status: kernel.StatusUnsync}
	// chronyd without rtcsync: STA_UNSYNC set, maxerror small.
	unsyncFlagOnly := &kernel.Timex{MaxError: 17 * time.Millisecond, Status: kernel.StatusUnsync}
	for _, tc := range []struct {
		name     string
		answered bool
		k        *kernel.Timex
		want     bool
	}{
		{"no daemon, maxerror saturated", false, saturated, true},
		{"a daemon answers", true, saturated, false},
		{"no daemon, STA_UNSYNC but maxerror small", false, unsyncFlagOnly, false},
		{"kernel unread", false, nil, false},
	} {
		if got := health.NobodyDisciplines(tc.answered, tc.k); got != tc.want {
			t.Errorf("%s: NobodyDisciplines = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestUndisciplinedWarning(t *testing.T) {
	t.Parallel()
	// The stepdown section's defaults: the socket's switch, the policy's triggers.
	def := struct {
		Enabled  bool
		Triggers policy.Triggers
	}{socket.DefaultConfig().Enabled, policy.DefaultTriggers()}
	got := health.UndisciplinedWarning(def.Enabled, def.Triggers)
	for _, want := range []string{"error_bound", "unsynchronized (source kernel, after 1m0s)",
		"stepdown.triggers.error_bound.enabled: false", "stepdown.triggers.unsynchronized.enabled: false", "stepdown.enabled: false"} {
		if !strings.Contains(got, want) {
			t.Errorf("the warning lacks %q: %s", want, got)
		}
	}
	if strings.Contains(got, "\n") {
		t.Errorf("the warning is more than one line: %q", got)
	}
	onlyUnsync := def
	onlyUnsync.Triggers.ErrorBound.Enabled = false
	if got := health.UndisciplinedWarning(onlyUnsync.Enabled, onlyUnsync.Triggers); strings.Contains(got, "error_bound") || !strings.Contains(got, "unsynchronized") {
		t.Errorf("with error_bound off: %s", got)
	}
	off := def
	off.Triggers.ErrorBound.Enabled, off.Triggers.Unsynchronized.Enabled = false, false
	if got := health.UndisciplinedWarning(off.Enabled, off.Triggers); got != "" {
		t.Errorf("with both triggers off: %q, want none", got)
	}
	off = def
	off.Enabled = false
	if got := health.UndisciplinedWarning(off.Enabled, off.Triggers); got != "" {
		t.Errorf("with the socket off: %q, want none", got)
	}
}
