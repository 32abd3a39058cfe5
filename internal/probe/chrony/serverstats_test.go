package chrony

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/beevik/ntp"
	"github.com/clockwatch/clockwatch/internal/chronydtest"
	"github.com/clockwatch/clockwatch/internal/testtool"
	fbchrony "github.com/facebook/time/ntp/chrony"
)

func TestNewServerStats(t *testing.T) {
	t.Parallel()
	v3 := &fbchrony.ReplyServerStats3{ServerStats3: fbchrony.ServerStats3{NTPHits: 5, NKEHits: 1, CMDHits: 9, NTPDrops: 2,
		NKEDrops: 3, CMDDrops: 4, LogDrops: 6, NTPAuthHits: 7, NTPInterleavedHits: 8, NTPTimestamps: 10, NTPSpanSeconds: 11}}
	got, err := newServerStats(v3)
	want := ServerStats{Version: 3, NTPHits: 5, NKEHits: 1, CmdHits: 9, NTPDrops: 2, NKEDrops: 3, CmdDrops: 4, LogDrops: 6,
		NTPAuthHits: 7, NTPInterleavedHits: 8, NTPTimestamps: 10, NTPSpan: 11 * time.Second}
	if err != nil || got != want {
		t.Errorf("newServerStats(v3) = %+v, %v; want %+v", got, err, want)
	}
	v4 := &fbchrony.ReplyServerStats4{ServerStats4: fbchrony.ServerStats4{NTPHits: 1 << 40, NTPKernelRxtimestamps: 3, NTPHwTxTimestamps: 4}}
	if got, err := newServerStats(v4); err != nil || got.NTPHits != 1<<40 || got.KernelRx != 3 || got.HWTx != 4 || got.Version != 4 {
		t.Errorf("newServerStats(v4) = %+v, %v", got, err)
	}
	if got, _ := newServerStats(&fbchrony.ReplyServerStats{ServerStats: fbchrony.ServerStats{CMDHits: 2}}); got.Serving() {
		t.Errorf("a chronyd that only answered chronyc counts as serving: %+v", got)
	}
	if _, err := newServerStats(&fbchrony.ReplyTracking{}); err == nil {
		t.Error("a tracking reply decoded as serverstats")
	}
	if err := validateServerStats("yes"); err == nil || err.Error() != `chrony.server_stats: must be auto, on or off, got "yes"` {
		t.Errorf("validateServerStats(yes) = %v", err)
	}
}

// TestServerStatsAgainstChronyd runs a chronyd -x that serves NTP on
// loopback: a pure client first (auto exports nothing), then a client
// queries it and the server side appears with the client counted.
func TestServerStatsAgainstChronyd(t *testing.T) {
	testtool.Short(t)
	t.Parallel()
	port := 20000 + int(time.Now().UnixNano()%20000)
	c := chronydtest.Start(t, chronydtest.Options{Sources: 1, Extra: []string{
		fmt.Sprintf("port %d", port), "bindaddress 127.0.0.1", "allow 127.0.0.1", "clientloglimit 1048576",
	}})
	cfg := DefaultConfig()
	cfg.Address, cfg.ConfPath = c.Socket, ""
	p := newServerPoller(ServerStatsAuto, time.Second, newClient(newNetDialer(cfg), cfg.Timeout, nil), nil)
	defer p.client.Close()
	ctx := context.Background()

	p.Poll(ctx)
	s := p.Snapshot()
	if !s.Up || s.Serving || s.Failures != 0 {
		t.Fatalf("before any client: %+v (err %v), want up and not serving", s, s.Err)
	}
	if got := p.nextPoll(); got != notServingRecheck {
		t.Errorf("not serving: next read in %v, want %v", got, notServingRecheck)
	}
	if s.Data.Stats.Version < 3 {
		t.Errorf("chronyd 4.x sent serverstats version %d, want 3 or more", s.Data.Stats.Version)
	}

	const queries = 3
	for i := range queries {
		if _, err := ntp.QueryWithOptions("127.0.0.1", ntp.QueryOptions{Port: port, Timeout: 2 * time.Second}); err != nil {
			t.Fatalf("NTP query %d to chronyd on port %d: %v\n%s", i, port, err, c.Logs())
		}
	}
	p.Poll(ctx)
	s = p.Snapshot()
	if !s.Up || !s.Serving {
		t.Fatalf("after %d queries: %+v (err %v), want serving", queries, s, s.Err)
	}
	if got := p.nextPoll(); got != time.Second {
		t.Errorf("serving: next read in %v, want the interval, 1s", got)
	}
	st := s.Data.Stats
	if st.NTPHits < queries || st.CmdHits == 0 || s.Data.Clients != 1 {
		t.Errorf("serverstats %+v, clients %d; want at least %d NTP hits, some command hits, 1 client", st, s.Data.Clients, queries)
	}
	// chronyc agrees.
	rows, err := c.Chronyc("serverstats")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 || len(rows[0]) == 0 {
		t.Fatalf("chronyc serverstats: %q", rows)
	}
	if rows[0][0] != fmt.Sprint(st.NTPHits) {
		t.Errorf("chronyc serverstats says %s NTP packets received, clockwatch %d", rows[0][0], st.NTPHits)
	}
}

// Over UDP chronyd refuses serverstats: auto stays quiet, on reports it.
func TestServerStatsOverUDP(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.Address = "127.0.0.1:1"
	for _, mode := range []string{ServerStatsAuto, ServerStatsOn} {
		var logs testtool.SyncBuffer
		p := newServerPoller(mode, time.Second, NewClient(cfg, nil), slog.New(slog.NewTextHandler(&logs, nil)))
		p.Poll(context.Background())
		s := p.Snapshot()
		if !errors.Is(s.Err, errServerStatsUDP) {
			t.Errorf("%s: err = %v, want the UDP refusal", mode, s.Err)
		}
		quiet := logs.String() == ""
		if quiet != (mode == ServerStatsAuto) || s.Serving != (mode == ServerStatsOn) {
			t.Errorf("%s: serving %v, logs %q", mode, s.Serving, logs.String())
		}
		if mode == ServerStatsOn && !strings.Contains(logs.String(), "unix socket") {
			t.Errorf("%s: logs %q do not say to use the unix socket", mode, logs.String())
		}
		p.client.Close()
	}
}

// BenchmarkPollServer is one read of the server side of a real chronyd with
// one client: serverstats and one page of clients over the unix socket.
func BenchmarkPollServer(b *testing.B) {
	port := 20000 + int(time.Now().UnixNano()%20000)
	c := chronydtest.Start(b, chronydtest.Options{Sources: 1, Extra: []string{
		fmt.Sprintf("port %d", port), "bindaddress 127.0.0.1", "allow 127.0.0.1",
	}})
	if _, err := ntp.QueryWithOptions("127.0.0.1", ntp.QueryOptions{Port: port, Timeout: 2 * time.Second}); err != nil {
		b.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Address = c.Socket
	cl := newClient(newNetDialer(cfg), cfg.Timeout, nil)
	defer cl.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cl.PollServer(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
