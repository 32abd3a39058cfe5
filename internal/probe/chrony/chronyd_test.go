package chrony

import (
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/chronydtest"
	"github.com/clockwatch/clockwatch/internal/testtool"
	"github.com/clockwatch/clockwatch/internal/timesource"
)

// waitFor polls the poller until cond returns "" or the timeout passes; cond
// returns why it is not yet satisfied.
func waitFor(t *testing.T, p *Poller, timeout time.Duration, what string, cond func(Snapshot) string) Snapshot {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		p.Poll(context.Background())
		s := p.Snapshot()
		why := cond(s)
		if why == "" {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %s; last snapshot: up=%v err=%v tracking=%+v sources=%+v", what, timeout, why, s.Up, s.Err, s.Data.Tracking, s.Data.Sources)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// chronycSystemOffset returns chronyc's "System time" with clockwatch's
// sign (local minus true).
func chronycSystemOffset(t *testing.T, c *chronydtest.Chronyd) (float64, error) {
	rows, err := c.Chronyc("tracking")
	if err != nil {
		return 0, err
	}
	if len(rows) != 1 || len(rows[0]) < 14 {
		return 0, fmt.Errorf("unexpected chronyc output %q", rows)
	}
	return -chronydtest.ParseFloat(t, rows[0][4]), nil
}

func TestChronydIntegration(t *testing.T) {
	testtool.Short(t)
	t.Parallel()
	c := chronydtest.Start(t, chronydtest.Options{Sources: 1, Silent: true})
	cfg := DefaultConfig()
	cfg.Address = c.Socket
	cfg.ConfPath = c.Conf
	p := newPoller(cfg, newClient(newNetDialer(cfg), cfg.Timeout, nil), nil)
	defer p.client.Close()

	// Before its source answers, chronyd is up but not synchronised.
	s := waitFor(t, p, 5*time.Second, "unsynchronised chronyd answers", func(s Snapshot) string {
		switch {
		case !s.Up:
			return fmt.Sprintf("down: %v", s.Err)
		case len(s.Data.Sources) != 1:
			return fmt.Sprintf("%d sources", len(s.Data.Sources))
		}
		return ""
	})
	if got := s.Data.Tracking.Leap; got != LeapUnsynchronised {
		t.Errorf("leap status before the first sample = %v, want %v", got, LeapUnsynchronised)
	}
	if s.Reading().Synchronized {
		t.Errorf("Reading().Synchronized = true before the first sample")
	}

	for _, step := range []struct {
		offset time.Duration
		want   float64 // local minus true
	}{
		{2 * time.Second, -2},
		{-3 * time.Second, 3},
	} {
		c.SetOffset(step.offset)
		c.SetSilent(false)
		s = waitFor(t, p, 10*time.Second, fmt.Sprintf("offset follows server at %v", step.offset), func(s Snapshot) string {
			tr := s.Data.Tracking
			switch {
			case !s.Up:
				return fmt.Sprintf("down: %v", s.Err)
			case tr.Leap != LeapNormal:
				return fmt.Sprintf("leap %v", tr.Leap)
			case len(s.Data.Sources) != 1 || s.Data.Sources[0].State != "sync":
				return fmt.Sprintf("sources %+v", s.Data.Sources)
			case math.Abs(tr.SystemOffset-step.want) > 0.05:
				return fmt.Sprintf("system offset %.6f, want %.1f", tr.SystemOffset, step.want)
			}
			ref, err := chronycSystemOffset(t, c)
			if err != nil {
				return err.Error()
			}
			if d := math.Abs(ref - tr.SystemOffset); d > 0.010 {
				return fmt.Sprintf("system offset %.6f differs from chronyc's %.6f by %.6f", tr.SystemOffset, ref, d)
			}
			return ""
		})
		r := s.Reading()
		if !r.HasData || !r.Up || !r.Synchronized || r.Leap != timesource.LeapNone {
			t.Errorf("Reading() = %+v, want data, up, synchronised, leap none", r)
		}
		tr := s.Data.Tracking
		if want := tr.ErrorBound(); math.Abs(r.ErrorBound.Seconds()-want) > 5e-9 || want != math.Abs(tr.SystemOffset)+tr.RootDispersion+tr.RootDelay/2 {
			t.Errorf("ErrorBound = %v, want %v s", r.ErrorBound, want)
		}
	}

	// A silent source becomes unreachable.
	c.SetSilent(true)
	waitFor(t, p, 15*time.Second, "source unreachable", func(s Snapshot) string {
		if src := s.Data.Sources; len(src) != 1 || src[0].State != "unreach" {
			return fmt.Sprintf("sources %+v", src)
		}
		return ""
	})
	c.SetSilent(false)

	// chronyd killed: the poller reports down but keeps the last data;
	// restarted: up again.
	c.Stop()
	p.Poll(context.Background())
	s = p.Snapshot()
	if s.Up || s.Err == nil || !s.HaveData {
		t.Fatalf("after chronyd was killed: up=%v err=%v haveData=%v, want down with an error and the old data", s.Up, s.Err, s.HaveData)
	}
	if !strings.Contains(s.Err.Error(), c.Socket) {
		t.Errorf("error %q does not name the socket %s", s.Err, c.Socket)
	}
	t.Logf("error while chronyd is down: %v", s.Err)
	if r := s.Reading(); r.Up || !r.HasData {
		t.Errorf("Reading() while down = %+v, want its data and not up", r)
	}
	c.Restart()
	waitFor(t, p, 5*time.Second, "up after restart", func(s Snapshot) string {
		if !s.Up {
			return fmt.Sprintf("down: %v", s.Err)
		}
		return ""
	})
	p.runAudit()
	if s := p.Snapshot(); s.Failures == 0 || s.Audit == nil {
		t.Errorf("failures = %d, audit = %v: want failures counted and chrony.conf audited", s.Failures, s.Audit)
	}

	// The reply socket sits beside chronyd's, writable for chronyd's user,
	// and goes away with the connection.
	socks, _ := filepath.Glob(filepath.Join(c.Dir, "clockwatch.*.sock"))
	if len(socks) != 1 {
		t.Fatalf("reply sockets %v, want exactly one while connected", socks)
	}
	if st, err := os.Stat(socks[0]); err != nil || st.Mode().Perm() != 0o666 {
		t.Errorf("reply socket %s: mode %v, err %v; want 0666", socks[0], st.Mode(), err)
	}
	p.client.Close()
	if socks, _ := filepath.Glob(filepath.Join(c.Dir, "clockwatch.*.sock")); len(socks) != 0 {
		t.Errorf("reply sockets %v left after Close", socks)
	}
}

// TestCapture records chronyd's replies into testdata/ for the replay tests
// (go test -run TestCapture ./probe/chrony -capture), then rewrite the
// golden files with -update.
func TestCapture(t *testing.T) {
	if !*capture {
		t.Skip("captures only with -capture")
	}
	for _, transport := range []Transport{TransportUnix, TransportUDP} {
		port := 0
		if transport == TransportUDP {
			port = 32323
		}
		c := chronydtest.Start(t, chronydtest.Options{Sources: 8, Silent: true, CmdPort: port})
		cfg := DefaultConfig()
		cfg.Address = c.Socket
		if transport == TransportUDP {
			cfg.Address = fmt.Sprintf("127.0.0.1:%d", port)
		}
		rec := &recordingDialer{inner: newNetDialer(cfg), replies: map[string][]byte{}}
		p := newPoller(cfg, newClient(rec, cfg.Timeout, nil), nil)
		waitFor(t, p, 5*time.Second, "8 sources", func(s Snapshot) string {
			if !s.Up || len(s.Data.Sources) != 8 {
				return fmt.Sprintf("up=%v err=%v", s.Up, s.Err)
			}
			return ""
		})
		if err := rec.save(filepath.Join("testdata", string(transport)+"-unsynced")); err != nil {
			t.Fatal(err)
		}
		rec.replies = map[string][]byte{}
		p.client.names = map[string]string{}
		c.SetOffset(2 * time.Second)
		c.SetSilent(false)
		waitFor(t, p, 10*time.Second, "synchronised", func(s Snapshot) string {
			if !s.Up || !s.Data.Tracking.Synchronised() || s.Data.SelectableSources() < 2 {
				return fmt.Sprintf("up=%v err=%v", s.Up, s.Err)
			}
			for _, src := range s.Data.Sources {
				if src.Stats == nil || src.Stats.Samples < 6 || src.Reachability != 0xff {
					return fmt.Sprintf("source %s: %+v", src.Address, src.Stats)
				}
			}
			return ""
		})
		p.client.names = map[string]string{}
		rec.replies = map[string][]byte{}
		p.Poll(context.Background())
		if err := rec.save(filepath.Join("testdata", string(transport)+"-synced")); err != nil {
			t.Fatal(err)
		}
		p.client.Close()
		c.Stop()
	}
}

// TestChronydAutoAddress finds chronyd by itself: the unix socket when it
// exists, else UDP; over UDP chronyd still answers tracking and sources.
func TestChronydAutoAddress(t *testing.T) {
	testtool.Short(t)
	t.Parallel()
	const port = 32325
	c := chronydtest.Start(t, chronydtest.Options{Sources: 1, CmdPort: port})
	for _, tc := range []struct {
		name    string
		sockets []string
		want    Transport
	}{
		{name: "socket exists", sockets: []string{filepath.Join(c.Dir, "missing.sock"), c.Socket}, want: TransportUnix},
		{name: "no socket", sockets: []string{filepath.Join(c.Dir, "missing.sock")}, want: TransportUDP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			d := newNetDialer(cfg)
			d.socketPaths = tc.sockets
			// The first dial tries the first UDP address.
			d.udpAddrs = []string{fmt.Sprintf("127.0.0.1:%d", port), "[::1]:1"}
			cl := newClient(d, cfg.Timeout, nil)
			defer cl.Close()
			data, err := cl.Poll(context.Background())
			if err != nil {
				t.Fatalf("Poll: %v", err)
			}
			if tr, _ := cl.Transport(); tr != tc.want || len(data.Sources) != 1 || data.Sources[0].Address != "127.0.0.11" {
				t.Errorf("transport %s, sources %+v; want %s and the one source", tr, data.Sources, tc.want)
			}
		})
	}
}

func TestExplainDial(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want string
	}{
		{syscall.EACCES, "permission denied on chronyd's socket /run/chrony/chronyd.sock (permission denied): run clockwatch in the group that owns it (_chrony on Debian and Ubuntu, chrony on Fedora and RHEL), or set chrony.address to 127.0.0.1:323 (UDP only gives tracking and sources)"},
		{syscall.ENOENT, "chronyd's socket /run/chrony/chronyd.sock does not exist (no such file or directory): is chronyd running? Set chrony.address if its socket is elsewhere"},
		{syscall.ECONNREFUSED, "nothing answers on chronyd's socket /run/chrony/chronyd.sock (connection refused): chronyd is not running"},
	} {
		if got := explainDial("/run/chrony/chronyd.sock", tc.err).Error(); got != tc.want {
			t.Errorf("explainDial(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// TestStaleReplySocketsRemoved: reply sockets that clockwatch processes
// which died left in the reply directory (clockwatch.PID.N.sock, nobody
// bound to them) are removed when the directory is first used; a live one
// (another clockwatch, perhaps in another PID namespace) and other files stay.
func TestStaleReplySocketsRemoved(t *testing.T) {
	testtool.Short(t)
	t.Parallel()
	c := chronydtest.Start(t, chronydtest.Options{Sources: 1})
	dir := t.TempDir()
	bind := func(name string) *net.UnixConn {
		t.Helper()
		conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: filepath.Join(dir, name), Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		return conn
	}
	// A datagram socket's Close leaves its file: as a killed process does.
	for _, name := range []string{"clockwatch.4001.1.sock", "clockwatch.4001.2.sock", "clockwatch.77.9.sock"} {
		bind(name).Close()
	}
	live := bind("clockwatch.4002.1.sock")
	defer live.Close()
	if err := os.WriteFile(filepath.Join(dir, "chronyd.pid"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	cfg := DefaultConfig()
	cfg.Address = c.Socket
	cfg.ReplySocketDir = dir
	cfg.ConfPath = ""
	p := newPoller(cfg, newClient(newNetDialer(cfg), cfg.Timeout, nil), nil)
	defer p.client.Close()
	waitFor(t, p, 5*time.Second, "chronyd answers", func(s Snapshot) string {
		if !s.Up {
			return fmt.Sprintf("down: %v", s.Err)
		}
		return ""
	})
	var left []string
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	own := fmt.Sprintf("clockwatch.%d.", os.Getpid())
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), own) {
			left = append(left, e.Name())
		}
	}
	if want := []string{"chronyd.pid", "clockwatch.4002.1.sock"}; strings.Join(left, " ") != strings.Join(want, " ") {
		t.Errorf("reply directory holds %q, want %q besides this process's own socket", left, want)
	}
}
