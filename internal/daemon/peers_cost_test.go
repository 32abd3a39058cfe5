package daemon_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/daemontest"
	"github.com/clockwatch/clockwatch/internal/peers"
	"github.com/clockwatch/clockwatch/stepdown"
)

// cpuTicks is a process's user and system time, in clock ticks (1/100 s).
func cpuTicks(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

// TestPeersIdleCost measures the daemon's CPU with no peers and with 16
// (the default sample: every one measured every 5 s round, 4 exchanges
// each, and 16 peers asking it as often), for CLOCKWATCH_PEERS_COST=1
// (a minute each). The peers are responders and queriers in this process.
func TestPeersIdleCost(t *testing.T) {
	if os.Getenv("CLOCKWATCH_PEERS_COST") != "1" {
		t.Skip("a measurement of two minutes: CLOCKWATCH_PEERS_COST=1 runs it")
	}
	bin := daemontest.Build(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var addrs []string
	for range 16 {
		c, err := peers.ListenUDP("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		r := peers.NewResponder(c, peers.ResponderOptions{Rate: 1000, Burst: 1000, Allowed: func(a netip.Addr) bool { return a.IsLoopback() },
			Local: func() peers.State { return peers.State{State: stepdown.StateOK, Epoch: 1} }})
		go r.Run(ctx)
		addrs = append(addrs, fmt.Sprintf("%q", c.LocalAddr().String()))
	}
	base := `chrony: {enabled: false}
stepdown:
  triggers:
    error_bound: {enabled: false}
    unsynchronized: {enabled: false}
`
	port := freeUDPPort(t)
	const window = 60 * time.Second
	measure := func(name, conf string, ask bool) float64 {
		path := filepath.Join(t.TempDir(), "clockwatch.yml")
		if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		d := daemontest.Start(t, bin, daemontest.Options{Args: []string{"--config.file=" + path}})
		actx, stop := context.WithCancel(ctx)
		defer stop()
		if ask {
			// 16 peers asking it: 4 exchanges each every 5 s.
			for range 16 {
				go func() {
					tk := time.NewTicker(5 * time.Second)
					defer tk.Stop()
					for {
						for range 4 {
							peers.NTPExchanger{}.Exchange(fmt.Sprintf("127.0.0.1:%d", port), time.Second, nil)
							time.Sleep(10 * time.Millisecond)
						}
						select {
						case <-actx.Done():
							return
						case <-tk.C:
						}
					}
				}()
			}
		}
		time.Sleep(10 * time.Second) // started, first rounds done
		c0, t0 := cpuTicks(t, d.PID()), time.Now()
		time.Sleep(window)
		c1 := cpuTicks(t, d.PID())
		frac := float64(c1-c0) / 100 / time.Since(t0).Seconds()
		load, _ := os.ReadFile("/proc/loadavg")
		t.Logf("%s: %.3f%% of a core (%d ticks in %v; load %s)", name, 100*frac, c1-c0, window, strings.Fields(string(load))[0])
		if ask {
			if body := scrape(t, d); !strings.Contains(body, "clockwatch_peer_measured 16\n") {
				t.Errorf("the 16 peers were not measured")
			}
		}
		d.Stop()
		return frac
	}
	none := measure("no peers", base, false)
	sixteen := measure("16 peers", base+fmt.Sprintf("peers: {listen: \"127.0.0.1:%d\", static: [%s], rate_limit: 100}\n", port, strings.Join(addrs, ", ")), true)
	t.Logf("16 peers cost %.3f%% of a core more than none", 100*(sixteen-none))
}
