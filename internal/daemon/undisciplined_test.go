package daemon

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/config"
	"github.com/clockwatch/clockwatch/internal/hostclock/hostclocktest"
	"github.com/clockwatch/clockwatch/internal/kernel"
	"github.com/clockwatch/clockwatch/internal/probe/chrony"
	"github.com/clockwatch/clockwatch/internal/probe/timesyncd"
	"github.com/clockwatch/clockwatch/internal/testtool"
	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/clockwatch/clockwatch/internal/timesources"
)

// A host nobody disciplines gets one WARN at start naming the triggers and
// the keys that turn them off; a host whose kernel is disciplined, and a
// configuration that turned those triggers off, get none.
func TestWarnIfUndisciplined(t *testing.T) {
	t.Parallel()
	undisciplined := &hostclocktest.Timex{Raw: kernel.RawTimex{MaxError: 16_000_000, EstError: 16_000_000, Status: int32(kernel.StatusUnsync)}}
	// A kernel a time daemon disciplined a minute ago: maxerror still small.
	recent := &hostclocktest.Timex{Raw: kernel.RawTimex{MaxError: 30_000, Status: int32(kernel.StatusUnsync)}}
	noTriggers := config.DefaultStepdown()
	noTriggers.Policy.Triggers.Unsynchronized.Enabled, noTriggers.Policy.Triggers.ErrorBound.Enabled = false, false
	for _, tc := range []struct {
		name   string
		chrony bool
		timex  *hostclocktest.Timex
		sd     config.Stepdown
		want   bool
	}{
		{"chronyd absent, kernel undisciplined", true, undisciplined, config.DefaultStepdown(), true},
		{"chrony turned off, kernel undisciplined", false, undisciplined, config.DefaultStepdown(), true},
		{"chronyd absent, kernel recently disciplined", true, recent, config.DefaultStepdown(), false},
		{"triggers turned off", true, undisciplined, noTriggers, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var logs testtool.SyncBuffer
			logger := slog.New(slog.NewTextHandler(&logs, nil))
			cc := chrony.DefaultConfig()
			if !tc.chrony {
				cc.Mode = timesource.ModeOff
			}
			cc.Address = filepath.Join(t.TempDir(), "no-chronyd.sock")
			cc.ReplySocketDir = t.TempDir() // never the host's /run/clockwatch
			cc.ConfPath = ""
			cfg := config.Default()
			cfg.Chrony = cc
			cfg.PTP.Mode, cfg.Timesyncd.Mode = timesource.ModeOff, timesyncd.ModeOff
			sources := timesources.Build(&cfg, timesources.Env{Logger: logger, Timex: tc.timex})
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			// The sources stop before the test's directories go: the
			// chrony poller's reply socket is in one of them.
			var wg sync.WaitGroup
			defer wg.Wait()
			defer cancel()
			for _, task := range sources.Tasks() {
				wg.Go(func() { task(ctx) })
			}
			start := time.Now()
			if err := warnIfUndisciplined(ctx, sources, tc.timex, tc.sd, logger); err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("the check took %v: it should decide on chrony's first failed poll", took)
			}
			got := strings.Count(logs.String(), "nobody disciplines this clock")
			if tc.want && (got != 1 || !strings.Contains(logs.String(), "level=WARN") ||
				!strings.Contains(logs.String(), "stepdown.triggers.unsynchronized.enabled: false")) {
				t.Errorf("want one WARN naming the trigger and its key; log:\n%s", logs.String())
			}
			if !tc.want && got != 0 {
				t.Errorf("want no warning; log:\n%s", logs.String())
			}
		})
	}
}
