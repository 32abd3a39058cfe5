package daemon

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clockwatch/clockwatch/internal/config"
)

// A reload names every setting it cannot apply, and none that it does.
func TestReloadNamesWhatNeedsARestart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "clockwatch.yml")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("{}\n")
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	d := New(cfg, Options{ConfigFile: path}, slog.New(slog.NewTextHandler(&log, nil)))
	write("clock:\n  sample_interval: 250ms\nstepdown:\n  heartbeat: 2s\n  hold_down: 1m\nhealth:\n  offset_warning: 50ms\n")
	if !d.Reload() {
		t.Fatalf("reload refused: %s", log.String())
	}
	got := log.String()
	if !strings.Contains(got, `settings="clock.sample_interval, stepdown.heartbeat"`) {
		t.Errorf("log does not name exactly the two settings that need a restart:\n%s", got)
	}
	// An empty file (an editor's truncation) is refused, not the defaults.
	log.Reset()
	write("")
	if d.Reload() {
		t.Errorf("reload of an empty file accepted:\n%s", log.String())
	}
	if d.cfg.Load().Health.OffsetWarning.String() != "50ms" {
		t.Errorf("running configuration changed by a refused reload")
	}
}
