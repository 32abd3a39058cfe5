package vmclock

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clockwatch/clockwatch/internal/timesource"
)

// fakeDevice is a page in memory the test changes.
type fakeDevice struct {
	mu   sync.Mutex
	page Page
	err  error
}

func (d *fakeDevice) Read() (Page, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.page, d.err
}

func (d *fakeDevice) Close() error { return nil }

func (d *fakeDevice) set(f func(*Page)) {
	d.mu.Lock()
	f(&d.page)
	d.mu.Unlock()
}

type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.b.Write(p) }
func (l *logBuf) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range strings.Split(strings.TrimSpace(l.b.String()), "\n") {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func TestPollerAbsentDevice(t *testing.T) {
	t.Parallel()
	var log logBuf
	opens := 0
	p := NewPoller(DefaultConfig(), slog.New(slog.NewTextHandler(&log, nil)), Options{Open: func(path string) (Device, error) {
		opens++
		return nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
	}})
	for range 3 {
		p.Poll()
	}
	r := p.Reading()
	if !r.IsAbsent() || r.HasDisruptionMarker || opens != 3 {
		t.Errorf("Reading() = %+v after %d opens; want an absent source without a marker", r, opens)
	}
	if s := p.Snapshot(); s.Polls != 0 || s.Failures != 0 {
		t.Errorf("an absent device counted %d polls, %d failures; want none", s.Polls, s.Failures)
	}
	if l := log.lines(); len(l) != 1 || !strings.Contains(l[0], "no VMClock device") {
		t.Errorf("log = %q, want one line saying there is no device", l)
	}
}

func TestPollerModeOnWantsTheDevice(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.Mode = ModeOn
	p := NewPoller(cfg, nil, Options{Open: func(string) (Device, error) { return nil, os.ErrNotExist }})
	p.Poll()
	r := p.Reading()
	if r.IsAbsent() || r.Up || r.Err == nil || p.Snapshot().Failures != 1 {
		t.Errorf("mode on without the device: Reading() = %+v; want a failure, not absence", r)
	}
}

func TestPollerPermissionSaysWhatFixesIt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := dir + "/vmclock0"
	if err := os.WriteFile(path, page(), 0o000); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() == 0 {
		// root reads anything: the open succeeds; mapping a regular file works too.
		d, err := OpenDevice(path)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if pg, err := d.Read(); err != nil || pg.DisruptionMarker != 0x1122334455667788 {
			t.Errorf("OpenDevice(a page in a file).Read() = %+v, %v", pg, err)
		}
		return
	}
	_, err := OpenDevice(path)
	if !errors.Is(err, os.ErrPermission) || !strings.Contains(err.Error(), "udev rule") {
		t.Errorf("OpenDevice(unreadable) = %v; want a permission error saying how to fix it", err)
	}
}

// The marker's and the status's changes, as a migration makes them: the
// Changed hook gets the new reading at once (not the first read), the log
// says so once per change, and the counters count.
func TestPollerSeesADisruption(t *testing.T) {
	t.Parallel()
	dev := &fakeDevice{page: Page{Version: 1, Size: 4096, CounterID: CounterInvalid, DisruptionMarker: 1}}
	var log logBuf
	var changed []timesource.Reading
	now := time.Unix(1000, 0)
	p := NewPoller(DefaultConfig(), slog.New(slog.NewTextHandler(&log, nil)), Options{
		Open:    func(string) (Device, error) { return dev, nil },
		Now:     func() time.Time { return now },
		Changed: func(r timesource.Reading) { changed = append(changed, r) },
	})
	type step struct {
		change func(*Page)
		err    error
	}
	var got []string
	for _, s := range []step{
		{change: func(*Page) {}},
		{change: func(*Page) {}},
		{change: func(pg *Page) { pg.DisruptionMarker = 2 }},
		{change: func(pg *Page) { pg.ClockStatus = StatusUnreliable }},
		{err: errors.New("gone")},
		{change: func(pg *Page) { pg.ClockStatus = StatusSynchronized; pg.Flags = FlagDisruptionImminent }},
	} {
		dev.set(func(pg *Page) {
			if s.change != nil {
				s.change(pg)
			}
		})
		dev.mu.Lock()
		dev.err = s.err
		dev.mu.Unlock()
		now = now.Add(time.Second)
		p.Poll()
		r := p.Reading()
		got = append(got, fmt.Sprintf("up=%v marker=%v/%d unreliable=%v synced=%v detail=%q", r.Up, r.HasDisruptionMarker, r.DisruptionMarker, r.ClockUnreliable, r.Synchronized, r.Detail))
	}
	want := []string{
		`up=true marker=true/1 unreliable=false synced=false detail="disruption marker 1, clock unknown"`,
		`up=true marker=true/1 unreliable=false synced=false detail="disruption marker 1, clock unknown"`,
		`up=true marker=true/2 unreliable=false synced=false detail="disruption marker 2, clock unknown"`,
		`up=true marker=true/2 unreliable=true synced=false detail="disruption marker 2, clock unreliable"`,
		`up=false marker=true/2 unreliable=false synced=false detail="disruption marker 2, clock unreliable"`,
		`up=true marker=true/2 unreliable=false synced=true detail="disruption marker 2, clock synchronized, disruption imminent (about an hour)"`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("readings (-want +got):\n%s", diff)
	}
	var hooks []string
	for _, r := range changed {
		hooks = append(hooks, fmt.Sprintf("%d unreliable=%v", r.DisruptionMarker, r.ClockUnreliable))
	}
	if diff := cmp.Diff([]string{"2 unreliable=false", "2 unreliable=true", "2 unreliable=false"}, hooks); diff != "" {
		t.Errorf("Changed calls (-want +got):\n%s", diff)
	}
	s := p.Snapshot()
	if s.Disruptions != 1 || !s.DisruptionAt.Equal(time.Unix(1003, 0)) || s.Polls != 6 || s.Failures != 1 {
		t.Errorf("Snapshot() = %+v; want 1 disruption at 1003 s, 6 polls, 1 failure", s)
	}
	var levels []string
	for _, l := range log.lines() {
		_, msg, _ := strings.Cut(l, `msg="`)
		msg, _, _ = strings.Cut(msg, `"`)
		levels = append(levels, strings.Fields(l)[1]+" "+msg)
	}
	wantLog := []string{
		"level=INFO VMClock device found",
		"level=WARN VMClock disruption: the VM was migrated or restored from a snapshot",
		"level=INFO VMClock clock status changed",
		"level=ERROR cannot read the VMClock page",
		"level=INFO VMClock page readable again",
		"level=INFO VMClock clock status changed",
	}
	if diff := cmp.Diff(wantLog, levels); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
}
