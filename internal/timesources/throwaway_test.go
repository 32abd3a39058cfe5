package timesources

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/clockwatch/clockwatch/internal/exporter"
	"github.com/clockwatch/clockwatch/internal/hostclock/hostclocktest"
	"github.com/clockwatch/clockwatch/internal/loop"
	"github.com/clockwatch/clockwatch/internal/policy"
	"github.com/clockwatch/clockwatch/internal/timesource"
)

// throwawaySection is the section of a source that exists only in this
// test: the shared block, its own thresholds and a key of its own.
type throwawaySection struct {
	timesource.Common `yaml:",inline"`
	Judges            `yaml:",inline"`
	Path              string `yaml:"path"`
}

func (c throwawaySection) Validate() error {
	return errors.Join(c.Common.Validate("throwaway", timesource.Limits{MinPoll: time.Millisecond, MaxPoll: time.Hour}),
		c.Judges.Validate("throwaway"))
}

// throwawayPoller has news once it runs; its reading says nothing of its
// role (the registry stamps the section's).
type throwawayPoller struct{ news *loop.Signal }

func (p *throwawayPoller) Reading() timesource.Reading {
	return timesource.Reading{Source: "throwaway", Found: true, Up: true, HasData: true, Synchronized: true}
}

func (p *throwawayPoller) Run(ctx context.Context) error {
	p.news.Notify()
	<-ctx.Done()
	return nil
}

// A source is its package, its exporter file, its section and one
// registration: a source registered here only (what its package, exporter
// file and registry entry would hold, in this file) is built, run, scraped,
// polled by `clockwatch status`, heard when it has news beside VMClock,
// judged by its own thresholds and switched, with nothing else written for
// it. docs/architecture.md ("Adding a source") counts the files.
func TestThrowawaySource(t *testing.T) {
	t.Parallel()
	var sec throwawaySection // what Sections' field would be
	news := new(loop.Signal)
	reg := Register(Source[throwawaySection]{Name: "throwaway", Section: "throwaway", Traits: Traits{BoundsRealtime: true, Disciplines: true},
		Field: func(*Sections) *throwawaySection { return &sec },
		Default: func() throwawaySection {
			return throwawaySection{Common: timesource.Common{Mode: timesource.ModeAuto, Role: timesource.SecondOpinion.String(),
				PollInterval: time.Second, Timeout: time.Second},
				Judges: Judges{Triggers: policy.SourceTriggers{Offset: policy.Threshold{Enabled: true, Threshold: time.Microsecond}},
					Health: Health{OffsetWarning: time.Microsecond, OffsetCritical: time.Millisecond, ErrorBoundWarning: time.Microsecond, ErrorBoundCritical: time.Millisecond}},
				Path: "/dev/throwaway"}
		},
		New: func(c throwawaySection, env Env) *Member {
			up := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "clockwatch_throwaway_up", Help: "The throwaway source answers."}, func() float64 { return 1 })
			m := Poller(&throwawayPoller{news: news}, up)
			m.News = news
			return m
		},
		Status: func(_ context.Context, c throwawaySection, h timesource.Host) (timesource.Status, bool) {
			return timesource.Status{Reading: (&throwawayPoller{}).Reading(), Lines: []timesource.Line{{Label: "throwaway", Value: c.Path}}}, true
		},
		Switch: "Read the throwaway source (throwaway.mode).",
	})
	regs := append(Registry(), reg)

	// Its section: defaults, validation, its own thresholds, reloads.
	ss := defaultSections(regs)
	if sec.Path != "/dev/throwaway" || !sec.On() {
		t.Fatalf("defaults not filled: %+v", sec)
	}
	ss.Chrony.Mode, ss.Ntpd.Mode, ss.PTP.Mode, ss.Timesyncd.Mode = timesource.ModeOff, timesource.ModeOff, timesource.ModeOff, timesource.ModeOff
	ss.VMClock.Path = t.TempDir() + "/no-vmclock0" // auto: a member with news, absent
	if err := ss.validate(regs); err != nil {
		t.Fatalf("valid sections: %v", err)
	}
	sec.Timeout = 2 * time.Hour
	if err := ss.validate(regs); err == nil || !strings.Contains(err.Error(), "throwaway.timeout: must not exceed throwaway.poll_interval") {
		t.Errorf("validate() with a bad throwaway.timeout = %v, want the key named", err)
	}
	sec.Timeout = time.Second
	var judged []string
	for _, j := range ss.judged(regs) {
		judged = append(judged, j.Name+" "+j.Section+" "+j.Triggers.Offset.Threshold.String())
	}
	if len(judged) == 0 || judged[len(judged)-1] != "throwaway throwaway 1µs" {
		t.Errorf("judged = %v: want the throwaway source's own thresholds last", judged)
	}
	if !reloadable(regs, "throwaway.triggers.offset.threshold") || !reloadable(regs, "throwaway.health.offset_warning") || reloadable(regs, "throwaway.path") {
		t.Error("reloadable: want the source's own thresholds, not its other keys")
	}

	// The daemon's side: members, readings, news, metrics.
	env := Env{Logger: slog.New(slog.DiscardHandler), Timex: hostclocktest.Disciplined()}
	ms := build(regs, &ss, env)
	if got := names(ms); len(got) < 2 || got[0] != "kernel" || got[len(got)-1] != "throwaway" {
		t.Fatalf("members %v: want the kernel first, the throwaway source last", got)
	}
	m := ms[len(ms)-1]
	if m.Role != timesource.SecondOpinion || !m.BoundsRealtime || !m.Disciplines {
		t.Errorf("member %+v: want the section's role and the registration's traits", m)
	}
	if r := ms.Readings()["throwaway"]; r.Role != timesource.SecondOpinion || !r.Up {
		t.Errorf("reading %+v: want it, with the section's role", r)
	}
	if slices.Contains(ms.Names(), "throwaway") {
		t.Errorf("Names() = %v: a second opinion is not waited for", ms.Names())
	}
	heard := ms.News()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Tasks[0](ctx) }()
	select {
	case <-heard:
	case <-time.After(5 * time.Second):
		t.Error("the throwaway source's news was not heard beside VMClock's")
	}
	cancel()
	if err := <-done; err != nil {
		t.Error(err)
	}
	reg2, err := exporter.NewRegistry(append(ms.Collectors(), exporter.NewScraper(slog.New(slog.DiscardHandler), ms.Updaters()...))...)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg2, "clockwatch_throwaway_up", "clockwatch_kernel_up"); err != nil || n != 2 {
		t.Errorf("gathered %d of the throwaway's and the kernel's up (err %v), want 2", n, err)
	}

	// `clockwatch status`'s side.
	var lines []string
	for _, r := range status(context.Background(), regs, &ss, env) {
		if r.Reading.Source != "throwaway" {
			continue
		}
		for _, l := range r.Lines {
			lines = append(lines, l.String())
		}
		if !r.Disciplines || r.Reading.Role != timesource.SecondOpinion {
			t.Errorf("report %+v: want the registration's traits and the section's role", r)
		}
	}
	if diff := cmp.Diff([]string{"throwaway      : /dev/throwaway"}, lines); diff != "" {
		t.Errorf("status lines (-want +got):\n%s", diff)
	}

	// Its switch, and the older spelling of its mode.
	if err := reg.Switch.Set(&ss, false); err != nil || sec.On() {
		t.Errorf("--no-collector.throwaway: err %v, on %v", err, sec.On())
	}
	if got := names(build(regs, &ss, env)); slices.Contains(got, "throwaway") {
		t.Errorf("members with the throwaway switched off = %v", got)
	}
	if err := reg.Switch.Set(&ss, true); err != nil || !sec.On() {
		t.Errorf("--collector.throwaway: err %v, on %v", err, sec.On())
	}
	off := false
	sec.Enabled = &off
	ss.fold(regs)
	if sec.Mode != timesource.ModeOff || sec.Enabled != nil {
		t.Errorf("enabled: false folded into %+v, want mode off", sec.Common)
	}
}
