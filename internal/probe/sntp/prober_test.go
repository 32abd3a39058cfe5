package sntp

import (
	"context"
	"errors"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/beevik/ntp"
	"github.com/clockwatch/clockwatch/internal/ntptest"
	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

func noSleep(context.Context, time.Duration) bool { return true }

// TestProberRealServer queries the test NTP server on loopback while its
// offset changes.
func TestProberRealServer(t *testing.T) {
	t.Parallel()
	srv, err := ntptest.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cfg := DefaultConfig()
	cfg.Servers = []string{srv.Addr().String()}
	cfg.SampleSpacing = 0
	p := NewProber(cfg, nil)
	for _, tc := range []struct {
		offset time.Duration
		want   float64
	}{{2 * time.Second, -2}, {-3 * time.Second, 3}} {
		srv.SetOffset(tc.offset)
		p.Round(context.Background())
		r := p.Results()[0]
		if !r.OK || r.Err != nil {
			t.Fatalf("server %v off: result %+v", tc.offset, r)
		}
		if d := math.Abs(r.Best.Offset - tc.want); d > 0.01 {
			t.Errorf("server %v off: offset %v, want %v within 10 ms", tc.offset, r.Best.Offset, tc.want)
		}
		if r.Best.Stratum != 1 || r.Best.RTT <= 0 || r.Best.RTT > 100*time.Millisecond {
			t.Errorf("best sample %+v: want stratum 1 and a small positive RTT", r.Best)
		}
	}
	if r := p.Results()[0]; r.Queries != 8 || r.QueryErrors != 0 {
		t.Errorf("queries %d, errors %d; want 8 and 0", r.Queries, r.QueryErrors)
	}
	// A silent server: no valid answer, the last good sample is kept.
	srv.SetSilent(true)
	cfg.Samples, cfg.Timeout = 1, 50*time.Millisecond
	p.cfg = cfg
	p.Round(context.Background())
	r := p.Results()[0]
	if r.OK || r.Err == nil || r.LastGood.IsZero() || !strings.Contains(r.Err.Error(), "no valid answer in 1 samples") {
		t.Errorf("silent server: %+v", r)
	}
}

// fakeQuerier answers from a list, in order.
type fakeQuerier struct {
	answers []answer
	n       int
}

type answer struct {
	r   *ntp.Response
	err error
}

func (f *fakeQuerier) Query(string, time.Duration) (*ntp.Response, error) {
	a := f.answers[f.n%len(f.answers)]
	f.n++
	return a.r, a.err
}

func good(offset, rtt time.Duration) answer {
	now := time.Now()
	return answer{r: &ntp.Response{ClockOffset: offset, RTT: rtt, Stratum: 2, RootDelay: time.Millisecond,
		RootDispersion: time.Millisecond, RootDistance: 2 * time.Millisecond, Time: now, ReferenceTime: now.Add(-time.Second)}}
}

func TestProberSamples(t *testing.T) {
	t.Parallel()
	kod := answer{r: &ntp.Response{Stratum: 0, KissCode: "RATE", Time: time.Now()}}
	timeout := answer{err: errors.New("read udp: i/o timeout")}
	for _, tc := range []struct {
		name       string
		answers    []answer
		wantOK     bool
		wantOffset float64
		wantErr    string
		wantKiss   map[string]uint64
		wantQ      uint64
	}{
		{name: "smallest RTT wins", answers: []answer{good(10*time.Millisecond, 30*time.Millisecond), good(2*time.Millisecond, 4*time.Millisecond), timeout, good(5*time.Millisecond, 9*time.Millisecond)},
			wantOK: true, wantOffset: -0.002, wantKiss: map[string]uint64{}, wantQ: 4},
		{name: "all time out", answers: []answer{timeout},
			wantErr: "querying ntp.example: no valid answer in 4 samples: read udp: i/o timeout (×4)", wantKiss: map[string]uint64{}, wantQ: 4},
		{name: "rate kiss stops the round", answers: []answer{timeout, kod, good(0, time.Millisecond)},
			wantErr: "querying ntp.example: no valid answer in 2 samples: kiss of death received (RATE) (×1); read udp: i/o timeout (×1)", wantKiss: map[string]uint64{"RATE": 1}, wantQ: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := DefaultConfig()
			cfg.Servers = []string{"ntp.example"}
			p := newProber(cfg, &fakeQuerier{answers: tc.answers}, nil)
			p.sleep = noSleep
			p.Round(context.Background())
			r := p.Results()[0]
			if r.OK != tc.wantOK || r.Queries != tc.wantQ {
				t.Errorf("OK %v queries %d, want %v %d", r.OK, r.Queries, tc.wantOK, tc.wantQ)
			}
			if tc.wantOK && math.Abs(r.Best.Offset-tc.wantOffset) > 1e-12 {
				t.Errorf("offset %v, want %v", r.Best.Offset, tc.wantOffset)
			}
			gotErr := ""
			if r.Err != nil {
				gotErr = r.Err.Error()
			}
			if gotErr != tc.wantErr {
				t.Errorf("error %q, want %q", gotErr, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantKiss, r.KissCodes); diff != "" {
				t.Errorf("kiss codes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, yaml, wantErr string
	}{
		{name: "defaults"},
		{name: "servers", yaml: "servers: [time.example, 192.0.2.1, \"[2001:db8::1]:123\", \"127.0.0.1:10123\"]"},
		{name: "bad servers", yaml: "servers: [\"\", \"a b\", x.example, x.example]",
			wantErr: "ntp_probes.servers[0]: empty server name\nntp_probes.servers[1]: \"a b\" is not a host name, IP address or host:port\nntp_probes.servers[3]: \"x.example\" is listed twice"},
		{name: "bad numbers", yaml: "interval: 0s\nsamples: 0\ntimeout: -1s\nsample_spacing: -1s",
			wantErr: "ntp_probes.interval: must be between 1s and 24h (servers rate-limit faster clients), got 0s\nntp_probes.samples: must be between 1 and 16, got 0\nntp_probes.sample_spacing: must be between 0s and 1m, got -1s\nntp_probes.timeout: must be between 1ms and 1m, got -1s"},
		{name: "round longer than interval", yaml: "interval: 5s\nsamples: 4\ntimeout: 1s\nsample_spacing: 2s",
			wantErr: "ntp_probes.interval: must be at least samples × timeout + (samples-1) × sample_spacing = 10s, got 5s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := DefaultConfig()
			if err := yaml.Unmarshal([]byte(tc.yaml), &c); err != nil {
				t.Fatal(err)
			}
			got := ""
			if err := c.Validate(); err != nil {
				got = err.Error()
			}
			if got != tc.wantErr {
				t.Errorf("Validate() = %q, want %q", got, tc.wantErr)
			}
		})
	}
	if _, err := splitServer("[::1]:123"); err != nil {
		t.Error(err)
	}
	if a, _ := splitServer("::1"); a != net.JoinHostPort("::1", "123") {
		t.Errorf("splitServer(::1) = %q", a)
	}
}
