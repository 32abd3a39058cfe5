package sntp

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/beevik/ntp"

	"github.com/clockwatch/clockwatch/internal/loop"
)

// Querier sends one SNTP query; the real one is github.com/beevik/ntp.
type Querier interface {
	Query(address string, timeout time.Duration) (*ntp.Response, error)
}

type beevik struct{}

// Query implements Querier.
func (beevik) Query(address string, timeout time.Duration) (*ntp.Response, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	p, err := net.LookupPort("udp", port)
	if err != nil {
		return nil, err
	}
	return ntp.QueryWithOptions(host, ntp.QueryOptions{Timeout: timeout, Port: p})
}

var _ Querier = beevik{}

// Result is the last round of queries to one server.
type Result struct {
	// Server is the server as configured.
	Server string
	// OK reports whether the round got at least one valid sample.
	OK bool
	// Err is why the round got no valid sample.
	Err error
	// At is when the round ended (monotonic reading included).
	At time.Time
	// The best sample (smallest round trip) of the last good round; zero
	// until one succeeded. LastGood is when it was taken.
	Best     Sample
	LastGood time.Time
	// Counters since the start.
	Queries, QueryErrors, ValidateFailures uint64
	// KissCodes counts kiss-o'-death replies by code (RATE, DENY, ...).
	KissCodes map[string]uint64
}

// Sample is one valid answer of a server.
type Sample struct {
	// Offset is the local clock minus the server's (positive: the local
	// clock is ahead), in seconds: the negated NTP clock offset.
	Offset float64
	// RTT is the round trip of the query.
	RTT time.Duration
	// Stratum and Leap are the server's.
	Stratum int
	Leap    int
	// RootDelay, RootDispersion and RootDistance are the server's figures
	// (distance: dispersion + delay/2, plus this query's part).
	RootDelay, RootDispersion, RootDistance time.Duration
}

// Prober queries the configured servers on its interval. It is a task:
// Run it under the daemon's errgroup.
type Prober struct {
	cfg    Config
	q      Querier
	logger *slog.Logger
	sleep  func(ctx context.Context, d time.Duration) bool

	mu      sync.RWMutex
	results map[string]Result
}

// NewProber returns a prober for cfg.
func NewProber(cfg Config, logger *slog.Logger) *Prober {
	return newProber(cfg, beevik{}, logger)
}

func newProber(cfg Config, q Querier, logger *slog.Logger) *Prober {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p := &Prober{cfg: cfg, q: q, logger: logger, sleep: loop.Sleep, results: map[string]Result{}}
	for _, s := range cfg.Servers {
		p.results[s] = Result{Server: s, KissCodes: map[string]uint64{}}
	}
	return p
}

// Results returns the last result of every server, in configuration order.
// It never waits on the network. KissCodes maps are copies.
func (p *Prober) Results() []Result {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]Result, 0, len(p.cfg.Servers))
	for _, s := range p.cfg.Servers {
		r := p.results[s]
		k := make(map[string]uint64, len(r.KissCodes))
		for c, n := range r.KissCodes {
			k[c] = n
		}
		r.KissCodes = k
		out = append(out, r)
	}
	return out
}

// Run probes every server each interval, the servers in parallel, until ctx
// is done.
func (p *Prober) Run(ctx context.Context) error {
	if len(p.cfg.Servers) == 0 {
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	for {
		p.Round(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Round probes every server once, in parallel, and publishes the results.
func (p *Prober) Round(ctx context.Context) {
	var wg sync.WaitGroup
	for _, s := range p.cfg.Servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.probe(ctx, s)
		}()
	}
	wg.Wait()
}

func (p *Prober) probe(ctx context.Context, server string) {
	addr, err := splitServer(server)
	var (
		best                  *Sample
		queries, qerrs, verrs uint64
		kisses                []string
		errs                  []error
	)
	for i := 0; err == nil && i < p.cfg.Samples; i++ {
		if i > 0 && !p.sleep(ctx, p.cfg.SampleSpacing) {
			break
		}
		queries++
		r, qerr := p.q.Query(addr, p.cfg.Timeout)
		if qerr != nil {
			qerrs++
			errs = append(errs, qerr)
			continue
		}
		if r.IsKissOfDeath() {
			kisses = append(kisses, r.KissCode)
		}
		if verr := r.Validate(); verr != nil {
			verrs++
			if r.IsKissOfDeath() {
				verr = fmt.Errorf("%w (%s)", verr, r.KissCode)
			}
			errs = append(errs, verr)
			if r.KissCode == "RATE" || r.KissCode == "DENY" || r.KissCode == "RSTR" {
				break // the server asks us to back off
			}
			continue
		}
		s := Sample{
			Offset:         -r.ClockOffset.Seconds(),
			RTT:            r.RTT,
			Stratum:        int(r.Stratum),
			Leap:           int(r.Leap),
			RootDelay:      r.RootDelay,
			RootDispersion: r.RootDispersion,
			RootDistance:   r.RootDistance,
		}
		if best == nil || s.RTT < best.RTT {
			best = &s
		}
	}
	now := time.Now()
	p.mu.Lock()
	res := p.results[server]
	wasOK := res.OK || res.At.IsZero()
	res.At = now
	res.Queries += queries
	res.QueryErrors += qerrs
	res.ValidateFailures += verrs
	for _, k := range kisses {
		res.KissCodes[k]++
	}
	switch {
	case err != nil:
		res.OK, res.Err = false, err
	case best != nil:
		res.OK, res.Err, res.Best, res.LastGood = true, nil, *best, now
	default:
		res.OK, res.Err = false, summarise(server, errs)
	}
	p.results[server] = res
	p.mu.Unlock()
	if wasOK && !res.OK {
		p.logger.Warn("NTP probe got no valid answer", "server", server, "err", res.Err)
	} else if !wasOK && res.OK {
		p.logger.Info("NTP probe answered again", "server", server)
	}
}

// summarise makes one error of a round's failures, most frequent first.
func summarise(server string, errs []error) error {
	if len(errs) == 0 {
		return fmt.Errorf("querying %s: stopped before any query", server)
	}
	count := map[string]int{}
	for _, e := range errs {
		count[e.Error()]++
	}
	msgs := make([]string, 0, len(count))
	for m := range count {
		msgs = append(msgs, m)
	}
	sort.Slice(msgs, func(i, j int) bool {
		if count[msgs[i]] != count[msgs[j]] {
			return count[msgs[i]] > count[msgs[j]]
		}
		return msgs[i] < msgs[j]
	})
	for i, m := range msgs {
		msgs[i] = fmt.Sprintf("%s (×%d)", m, count[m])
	}
	return &roundError{msg: fmt.Sprintf("querying %s: no valid answer in %d samples: %s", server, len(errs), strings.Join(msgs, "; ")), errs: errs}
}

// roundError is every failure of a round under one summary.
type roundError struct {
	msg  string
	errs []error
}

func (e *roundError) Error() string   { return e.msg }
func (e *roundError) Unwrap() []error { return e.errs }
