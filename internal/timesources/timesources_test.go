package timesources

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/clockwatch/clockwatch/internal/exporter"
	"github.com/clockwatch/clockwatch/internal/hostclock/hostclocktest"
	"github.com/clockwatch/clockwatch/internal/loop"
	"github.com/clockwatch/clockwatch/internal/ntptest"
	"github.com/clockwatch/clockwatch/internal/probe/sntp"
	"github.com/clockwatch/clockwatch/internal/probe/timesyncd"
	"github.com/clockwatch/clockwatch/internal/probe/vmclock"
	"github.com/clockwatch/clockwatch/internal/timesource"
)

// testConfig has every source on, each pointed at nothing of the host's:
// chronyd and ptp4l at missing sockets, timesyncd at a missing bus, the NTP
// probes at a server of the test's own. ntpd is off: an ntpd on this host's
// 127.0.0.1:123 must not change what the test sees.
func testConfig(t *testing.T, server string) *Sections {
	cfg := DefaultSections()
	cfg.Chrony.Address = t.TempDir() + "/no-chronyd.sock"
	cfg.Chrony.ReplySocketDir = t.TempDir() // never the host's /run/clockwatch
	cfg.Chrony.ConfPath = ""
	cfg.Ntpd.Mode = timesource.ModeOff
	cfg.NTPProbes.Servers = []string{server}
	cfg.NTPProbes.SampleSpacing, cfg.NTPProbes.Samples = 0, 2
	cfg.PTP.Address = t.TempDir() + "/no-ptp4l" // pinned: reported down
	cfg.Timesyncd.Address = "unix:path=" + t.TempDir() + "/no-bus"
	cfg.VMClock.Path = t.TempDir() + "/no-vmclock0" // auto: absent
	return &cfg
}

func names(ms Members) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}

// The daemon's sources, built from the registry, run, are scraped and give
// the readings the judges take.
func TestBuild(t *testing.T) {
	t.Parallel()
	srv, err := ntptest.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cfg := testConfig(t, srv.Addr().String())
	ms := Build(cfg, Env{Logger: slog.New(slog.DiscardHandler), Timex: hostclocktest.Disciplined()})
	if diff := cmp.Diff([]string{"kernel", "chrony", "ntp_probes", "ptp4l", "timesyncd", "vmclock"}, names(ms)); diff != "" {
		t.Fatalf("members (-want +got):\n%s", diff)
	}
	// chrony's server side, the NTP probes, ptp4l, timesyncd, VMClock.
	if n := len(ms.Collectors()); n != 5 {
		t.Errorf("%d collectors, want 5", n)
	}
	// the kernel's and chrony's.
	if n := len(ms.Updaters()); n != 2 {
		t.Errorf("%d updaters, want 2", n)
	}
	if ms.Polled() == nil || !ms.Wakes() || len(ms.Gatherers()) != 1 {
		t.Errorf("chrony's member: polled %v, wakes %v, %d gatherers: want its poll channel, its wake and its gatherer", ms.Polled(), ms.Wakes(), len(ms.Gatherers()))
	}
	reg, err := exporter.NewRegistry(append(ms.Collectors(), exporter.NewScraper(slog.New(slog.DiscardHandler), ms.Updaters()...))...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	tasks := ms.Tasks()
	for _, task := range tasks {
		go func() {
			if err := task(ctx); err != nil {
				t.Errorf("task: %v", err)
			}
			done <- struct{}{}
		}()
	}
	probeName := sntp.SourcePrefix + srv.Addr().String()
	for deadline := time.Now().Add(5 * time.Second); ; {
		set := ms.Readings()
		if !set["chrony"].Pending() && !set["ptp4l"].Pending() && !set["timesyncd"].Pending() && !set["vmclock"].Pending() && set[probeName].Up {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pollers did not run: %+v", set)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	for range tasks {
		<-done
	}
	set := ms.Readings()
	if r := set["chrony"]; r.Found || r.Up || r.Err == nil {
		t.Errorf("chrony reading without chronyd = %+v, want not found, not up, with the error", r)
	}
	if r := set["ptp4l"]; r.Up || r.Err == nil {
		t.Errorf("ptp4l reading without ptp4l = %+v, want down, with the error", r)
	}
	if r := set["timesyncd"]; !r.IsAbsent() {
		t.Errorf("timesyncd's reading without a bus = %+v, want absent", r)
	}
	if r := set["kernel"]; r.Role != timesource.Fallback || !r.Up || !r.Synchronized {
		t.Errorf("kernel reading = %+v, want an answering, synchronised fallback", r)
	}
	if r := set[probeName]; r.Role != timesource.SecondOpinion || !r.Up || !r.HasData {
		t.Errorf("probe reading %+v, want an answering second opinion", r)
	}
	// The start waits for every source but the second opinions.
	if diff := cmp.Diff([]string{"chrony", "kernel", "ptp4l", "timesyncd", "vmclock"}, ms.Names()); diff != "" {
		t.Errorf("Names() (-want +got):\n%s", diff)
	}
	var bounding []string
	for _, r := range ms.BoundingReadings() {
		bounding = append(bounding, r.Source)
	}
	// ptp4l's bound is the PTP hardware clock's; the kernel's is a fallback
	// the segment's judge leaves out by its role.
	if diff := cmp.Diff([]string{"chrony", probeName, "timesyncd"}, bounding); diff != "" {
		t.Errorf("BoundingReadings() (-want +got):\n%s", diff)
	}
	if decided, answered := ms.Disciplining(); !decided || answered {
		t.Errorf("Disciplining() = %v, %v: want decided (chronyd failed, timesyncd absent), nobody answered", decided, answered)
	}
	if !ms.OwnRate()() {
		t.Error("OwnRate() false with NTP probes: want true (they have news at their own rate)")
	}
	n, err := testutil.GatherAndCount(reg, "clockwatch_chrony_up", "clockwatch_kernel_up", "clockwatch_ntp_probe_up", "clockwatch_ptp4l_up", "clockwatch_timesyncd_found")
	if err != nil || n != 5 {
		t.Errorf("gathered %d series of the sources' up and found gauges (err %v), want 5", n, err)
	}

	cfg.NTPProbes.Role = sntp.RoleAuthoritative
	if got := Build(cfg, Env{Timex: hostclocktest.Disciplined()}).Names(); len(got) != 6 || got[2] != probeName {
		t.Errorf("Names() with authoritative probes = %v, want the probed server among them", got)
	}
}

// Turned off, a source is no member; the kernel always is.
func TestBuildOff(t *testing.T) {
	t.Parallel()
	cfg := DefaultSections()
	off := false
	cfg.Chrony.Enabled = &off // the older spelling
	cfg.Ntpd.Mode, cfg.PTP.Mode = timesource.ModeOff, timesource.ModeOff
	cfg.NTPProbes.Servers = nil
	cfg.Timesyncd.Mode = timesyncd.ModeOff
	cfg.VMClock.Mode = vmclock.ModeOff
	ms := Build(&cfg, Env{Timex: hostclocktest.Disciplined()})
	if diff := cmp.Diff([]string{"kernel"}, names(ms)); diff != "" {
		t.Errorf("members (-want +got):\n%s", diff)
	}
	if ms.Polled() != nil || ms.Wakes() || ms.OwnRate()() {
		t.Error("the kernel alone: want no poll channel, no wake, no own rate")
	}
	if r := Status(context.Background(), &cfg, Env{Timex: hostclocktest.Disciplined()}); len(r) != 1 || r[0].Reading.Source != "kernel" {
		t.Errorf("Status() = %+v, want the kernel's report only", r)
	}
}

func member(traits Traits, r timesource.Reading) *Member {
	return &Member{Name: r.Source, Traits: traits, Role: r.Role, Readings: func() []timesource.Reading { return []timesource.Reading{r} }}
}

// The undisciplined-host warning decides from the readings of the sources
// that discipline the clock, the daemon's (Disciplining) and status's
// (Disciplined) alike.
func TestDisciplining(t *testing.T) {
	t.Parallel()
	disc := Traits{Disciplines: true}
	answers := timesource.Reading{Source: "chrony", Found: true, Up: true, HasData: true}
	failed := timesource.Reading{Source: "chrony", Err: context.DeadlineExceeded}
	pending := timesource.Reading{Source: "ntpd"}
	second := answers
	second.Role = timesource.SecondOpinion
	for _, tc := range []struct {
		name                      string
		ms                        Members
		wantDecided, wantAnswered bool
	}{
		{"no sources", nil, true, false},
		{"chronyd answers", Members{member(disc, answers)}, true, true},
		{"chronyd answers, ntpd not yet", Members{member(disc, answers), member(disc, pending)}, false, true},
		{"chronyd failed", Members{member(disc, failed)}, true, false},
		{"ntpd not polled yet", Members{member(disc, pending)}, false, false},
		{"ptp4l answers (it disciplines the PHC)", Members{member(Traits{}, answers)}, true, false},
		{"a second opinion answers", Members{member(disc, second)}, true, false},
	} {
		decided, answered := tc.ms.Disciplining()
		if decided != tc.wantDecided || answered != tc.wantAnswered {
			t.Errorf("%s: Disciplining() = %v, %v, want %v, %v", tc.name, decided, answered, tc.wantDecided, tc.wantAnswered)
		}
		var rs []Report
		for _, m := range tc.ms {
			rs = append(rs, Report{Reading: m.Readings()[0], Traits: m.Traits})
		}
		if got := Disciplined(rs); got != tc.wantAnswered {
			t.Errorf("%s: Disciplined() = %v, want %v", tc.name, got, tc.wantAnswered)
		}
	}
}

// Every registration has a name and a constructor, no two the same name.
func TestRegistry(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, reg := range Registry() {
		if reg.Name == "" || reg.build == nil || seen[reg.Name] {
			t.Errorf("registration %+v: want a name of its own and a constructor", reg)
		}
		seen[reg.Name] = true
	}
}

// Every member's news and polls reach the stepdown feed, however many
// members have them (before, only the first member's channel was read: a
// second source with news was dropped without a word).
func TestSignalsMerged(t *testing.T) {
	t.Parallel()
	a, b := new(loop.Signal), new(loop.Signal)
	ms := Members{{Name: "a", News: a, Polled: a}, {Name: "kernel"}, {Name: "b", News: b, Polled: b}}
	news, polled := ms.News(), ms.Polled()
	for _, s := range []struct {
		name string
		sig  *loop.Signal
	}{{"a", a}, {"b", b}} {
		s.sig.Notify()
		for what, c := range map[string]<-chan struct{}{"news": news, "polled": polled} {
			select {
			case <-c:
			case <-time.After(time.Second):
				t.Errorf("member %s's %s not heard", s.name, what)
			}
		}
	}
	if (Members{{Name: "kernel"}}).News() != nil {
		t.Error("News() without a member that has news: want nil")
	}
}

// The stepdown feed's cadence is the registry's (chronyd's poll intervals),
// whether chrony is on or off, as the daemon had it.
func TestFeedCadence(t *testing.T) {
	t.Parallel()
	s := DefaultSections()
	if got := FeedCadence(&s); got != (Cadence{Poll: time.Second, MaxQuiet: 8 * time.Second}) {
		t.Errorf("FeedCadence(defaults) = %+v, want 1s, 8s", got)
	}
	s.Chrony.PollInterval, s.Chrony.MaxPollInterval, s.Chrony.Mode = 2*time.Second, 0, timesource.ModeOff
	if got := FeedCadence(&s); got != (Cadence{Poll: 2 * time.Second, MaxQuiet: 2 * time.Second}) {
		t.Errorf("FeedCadence(poll 2s, max 0, off) = %+v, want 2s, 2s", got)
	}
	if got := feedCadence(nil, &s); got != (Cadence{Poll: time.Second, MaxQuiet: time.Second}) {
		t.Errorf("feedCadence with no registration that sets one = %+v, want 1s, 1s", got)
	}
}
