package timesources

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/exporter"
	"github.com/clockwatch/clockwatch/internal/ntptest"
	"github.com/clockwatch/clockwatch/probe/chrony"
	"github.com/clockwatch/clockwatch/probe/ntpd"
	"github.com/clockwatch/clockwatch/probe/ptp"
	"github.com/clockwatch/clockwatch/probe/sntp"
	"github.com/clockwatch/clockwatch/timesource"
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
	if s.Chrony == nil || s.Ntpd != nil || s.NTPProbes == nil {
		t.Fatalf("sources %+v: want chrony and the probes, not ntpd (turned off)", s)
	}
	pc := ptp.DefaultConfig()
	pc.Address = t.TempDir() + "/no-ptp4l" // pinned: reported down
	s.EnablePTP(pc, slog.New(slog.DiscardHandler))
	if s.PTP == nil || len(s.Collectors()) != 2 {
		t.Fatalf("with ptp enabled: PTP %v, %d collectors: want the poller and its collector", s.PTP, len(s.Collectors()))
	}
	reg, err := exporter.NewRegistry(append(s.Collectors(), exporter.NewScraper(slog.New(slog.DiscardHandler), s.Probes()...))...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	for deadline := time.Now().Add(5 * time.Second); ; {
		if s.Chrony.Snapshot().Polls > 0 && s.PTP.Snapshot().Polls > 0 && len(s.NTPProbes.Results()) == 1 && s.NTPProbes.Results()[0].OK {
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
	if names := s.Names(); len(names) != 2 || names[0] != "chrony" || names[1] != "ptp4l" {
		t.Errorf("Names() = %v, want [chrony ptp4l]", names)
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
	n2, err := testutil.GatherAndCount(reg, "clockwatch_chrony_up", "clockwatch_ntp_probe_up", "clockwatch_ptp4l_up")
	if err != nil || n2 != 3 {
		t.Errorf("gathered %d series of clockwatch_chrony_up, clockwatch_ntp_probe_up and clockwatch_ptp4l_up (err %v), want 3", n2, err)
	}
	off := &Sources{}
	off.EnablePTP(ptp.Config{}, slog.New(slog.DiscardHandler))
	if off.PTP != nil {
		t.Error("EnablePTP with ptp.enabled false made a poller")
	}
}
