package timesources

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/exporter"
	"github.com/clockwatch/clockwatch/internal/ntptest"
	"github.com/clockwatch/clockwatch/internal/probe/chrony"
	"github.com/clockwatch/clockwatch/internal/probe/ntpd"
	"github.com/clockwatch/clockwatch/internal/probe/ptp"
	"github.com/clockwatch/clockwatch/internal/probe/sntp"
	"github.com/clockwatch/clockwatch/internal/probe/timesyncd"
	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestSources(t *testing.T) {
	t.Parallel()
	srv, err := ntptest.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c := chrony.DefaultConfig()
	c.Address = t.TempDir() + "/no-chronyd.sock"
	c.ReplySocketDir = t.TempDir() // never the host's /run/clockwatch
	c.ConfPath = ""
	n := ntpd.DefaultConfig()
	if !n.Enabled || n.Address != ntpd.AddressAuto {
		t.Errorf("ntpd's default %+v: want enabled, auto", n)
	}
	n.Enabled = false // an ntpd on this host's 127.0.0.1:123 must not change what the test sees
	p := sntp.DefaultConfig()
	p.Servers = []string{srv.Addr().String()}
	p.SampleSpacing, p.Samples = 0, 2
	s := New(c, n, p, slog.New(slog.DiscardHandler))
	if s.Chrony == nil || s.ChronyServer == nil || s.Ntpd != nil || s.NTPProbes == nil {
		t.Fatalf("sources %+v: want chrony (with its server side) and the probes, not ntpd (turned off)", s)
	}
	pc := ptp.DefaultConfig()
	pc.Address = t.TempDir() + "/no-ptp4l" // pinned: reported down
	s.EnablePTP(pc, slog.New(slog.DiscardHandler))
	ts := timesyncd.DefaultConfig()
	ts.Address = "unix:path=" + t.TempDir() + "/no-bus"
	s.EnableTimesyncd(ts, slog.New(slog.DiscardHandler))
	// chrony's server side, the NTP probes, ptp4l, timesyncd.
	if s.PTP == nil || s.Timesyncd == nil || len(s.Collectors()) != 4 {
		t.Fatalf("with ptp and timesyncd enabled: PTP %v, timesyncd %v, %d collectors: want both pollers and 4 collectors", s.PTP, s.Timesyncd, len(s.Collectors()))
	}
	if got := len(s.TimeSources()); got != 2 {
		t.Errorf("TimeSources() has %d sources, want ptp4l's and timesyncd's", got)
	}
	reg, err := exporter.NewRegistry(append(s.Collectors(), exporter.NewScraper(slog.New(slog.DiscardHandler), s.Probes()...))...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	for deadline := time.Now().Add(5 * time.Second); ; {
		if s.Chrony.Snapshot().Polls > 0 && s.PTP.Snapshot().Polls > 0 && s.Timesyncd.Snapshot().Polls > 0 &&
			len(s.NTPProbes.Results()) == 1 && s.NTPProbes.Results()[0].OK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("pollers did not run")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run() = %v", err)
	}
	if r := s.Readings()["chrony"]; r.Found || r.Up || r.Err == nil || r.Pending() {
		t.Errorf("chrony reading without chronyd = %+v, want not found, not up, with the error", r)
	}
	if names := s.Names(); len(names) != 3 || names[0] != "chrony" || names[1] != "ptp4l" || names[2] != "timesyncd" {
		t.Errorf("Names() = %v, want [chrony ptp4l timesyncd]", names)
	}
	if r := s.Readings()["ptp4l"]; r.Up || r.Err == nil || r.Pending() {
		t.Errorf("ptp4l reading without ptp4l = %+v, want down, with the error", r)
	}
	probe := s.Readings()["ntp_probe/"+srv.Addr().String()]
	if probe.Role != timesource.SecondOpinion || !probe.Up || !probe.HasData {
		t.Errorf("probe reading %+v, want an answering second opinion", probe)
	}
	p.Role = sntp.RoleAuthoritative
	if names := New(c, n, p, slog.New(slog.DiscardHandler)).Names(); len(names) != 2 || names[1] != "ntp_probe/"+srv.Addr().String() {
		t.Errorf("Names() with authoritative probes = %v, want chrony and the probed server", names)
	}
	if set := (&Sources{}).Readings(); len(set) != 0 {
		t.Errorf("Readings() with every source off = %+v, want none", set)
	}
	n2, err := testutil.GatherAndCount(reg, "clockwatch_chrony_up", "clockwatch_ntp_probe_up", "clockwatch_ptp4l_up", "clockwatch_timesyncd_found")
	if err != nil || n2 != 4 {
		t.Errorf("gathered %d series of clockwatch_chrony_up, clockwatch_ntp_probe_up, clockwatch_ptp4l_up and clockwatch_timesyncd_found (err %v), want 4", n2, err)
	}
	if r := s.Readings()["timesyncd"]; !r.IsAbsent() || r.Pending() {
		t.Errorf("timesyncd's reading without a bus = %+v, want absent (not pending: the start does not wait for it)", r)
	}
	off := &Sources{}
	off.EnablePTP(ptp.Config{}, slog.New(slog.DiscardHandler))
	off.EnableTimesyncd(timesyncd.Config{Mode: timesyncd.ModeOff}, slog.New(slog.DiscardHandler))
	if off.PTP != nil || off.Timesyncd != nil {
		t.Errorf("turned off, ptp4l %v and timesyncd %v have pollers", off.PTP, off.Timesyncd)
	}
}
