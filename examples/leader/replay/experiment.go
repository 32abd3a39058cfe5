package replay

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/sync/errgroup"

	"github.com/clockwatch/clockwatch/examples/leader"
	"github.com/clockwatch/clockwatch/examples/leader/proxy"
)

// Scenario is one run of the experiment.
type Scenario struct {
	Name       string
	Fencing    bool
	Clockwatch bool
	// LeaseClock is the clock the nodes judge their lease with; the
	// incident's lock client used the wall clock (the default).
	LeaseClock leader.LeaseClock
}

// Scenarios are the runs: the incident, each defence alone, both, and
// a fifth that shows what judging the lease by the monotonic clock alone does.
func Scenarios() []Scenario {
	return []Scenario{
		{Name: "naive"},
		{Name: "fencing only", Fencing: true},
		{Name: "clockwatch only", Clockwatch: true},
		{Name: "both", Fencing: true, Clockwatch: true},
		{Name: "monotonic lease timer only", LeaseClock: leader.LeaseClockMonotonic},
	}
}

func (s Scenario) leaseClock() leader.LeaseClock {
	if s.LeaseClock == "" {
		return leader.LeaseClockWall
	}
	return s.LeaseClock
}

// Params are the timings of a run.
type Params struct {
	// TTL is the lease TTL (15 s in the incident). etcd's client renews
	// every TTL/3.
	TTL time.Duration
	// Step is the step of node A's wall clock (-12.4 s in the incident).
	Step time.Duration
	// WriteInterval and Entries shape the leader's bookings.
	WriteInterval time.Duration
	Entries       int
}

// IncidentParams are the incident's numbers.
func IncidentParams() Params {
	return Params{TTL: 15 * time.Second, Step: -12400 * time.Millisecond, WriteInterval: 20 * time.Millisecond, Entries: 4}
}

// Scaled returns the incident's timings scaled to a lease of ttl: the step
// keeps its ratio to the TTL (12.4/15), so the shape of a run is the same,
// only shorter.
func Scaled(ttl time.Duration) Params {
	p := IncidentParams()
	p.Step = time.Duration(float64(p.Step) * float64(ttl) / float64(p.TTL)).Round(time.Millisecond)
	p.TTL = ttl
	return p
}

// Clockwatch is a node's clockwatch as the experiment sees it: what the node
// subscribes to, and a way to make it announce a step (a drill).
type Clockwatch interface {
	Guard() leader.ClockGuard
	// Step makes clockwatch tell its subscribers that the clock stepped by
	// step, and resume after hold.
	Step(ctx context.Context, step, hold time.Duration) error
}

// Env is what the runs share.
type Env struct {
	// Etcd is the etcd client endpoint (host:port).
	Etcd string
	// DSN is the ledger database.
	DSN string
	// Clockwatch returns node's clockwatch ("A" or "D") for one run, which
	// ends with ctx.
	Clockwatch func(ctx context.Context, node string) (Clockwatch, error)
	// Log receives the nodes' logs (nil: discarded).
	Log *slog.Logger
}

// Result is what one run measured.
type Result struct {
	Scenario Scenario
	Params   Params
	// DoubleLeader is how long A and D both believed they led.
	DoubleLeader time.Duration
	// StaleAttempted counts the entries A tried to book after D became
	// leader (bookings still in flight then included).
	StaleAttempted int64
	// StaleLanded counts writes that reached the table with a token older
	// than one the table had already seen: a deposed leader's bookings.
	StaleLanded int64
	// Overwrote counts the stale writes that replaced the new leader's
	// booking of the same entry.
	Overwrote int64
	// Rejected counts the entries the fence refused.
	Rejected int64
	// EventToStop is the time from the fault to A's last moment as leader.
	EventToStop time.Duration
	// LeaseToD is the time from the fault to D becoming leader (etcd
	// expiring A's lease, plus the election).
	LeaseToD time.Duration
	// Fault is when the fault was injected.
	Fault time.Time
	A, D  leader.Stats
}

// Run runs one scenario: A leads and books, then at the same moment its lease
// keepalive stalls (its etcd traffic is paused for longer than the TTL), its
// wall clock steps by p.Step and its clockwatch announces the step. Run
// returns when D leads, A has stopped and D has booked a few times.
func Run(ctx context.Context, env Env, p Params, sc Scenario) (res Result, err error) {
	res = Result{Scenario: sc, Params: p}
	log := env.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("run", sc.Name)
	store, err := leader.NewPGStore(ctx, env.DSN)
	if err != nil {
		return res, err
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		return res, err
	}
	if _, err := store.Pool().Exec(ctx, "TRUNCATE ledger, ledger_log RESTART IDENTITY"); err != nil {
		return res, fmt.Errorf("emptying the ledger: %w", err)
	}

	px, err := proxy.Listen("127.0.0.1:0", env.Etcd)
	if err != nil {
		return res, err
	}
	g, gctx := errgroup.WithContext(ctx)
	nodesCtx, stopNodes := context.WithCancel(gctx)
	defer func() {
		stopNodes()
		if werr := g.Wait(); werr != nil && err == nil {
			err = werr
		}
	}()
	g.Go(func() error { return px.Run(nodesCtx) })

	cliA, err := NewEtcdClient(px.Addr())
	if err != nil {
		return res, err
	}
	defer cliA.Close()
	cliD, err := NewEtcdClient(env.Etcd)
	if err != nil {
		return res, err
	}
	defer cliD.Close()

	cfg := leader.DefaultConfig()
	cfg.Election = fmt.Sprintf("/replay/%d/", time.Now().UnixNano())
	cfg.TTL, cfg.KeepAlive = p.TTL, p.TTL/3
	cfg.LeaseClock = sc.leaseClock()
	cfg.Fencing, cfg.Clockwatch = sc.Fencing, sc.Clockwatch
	cfg.WriteInterval, cfg.Entries = p.WriteInterval, p.Entries
	cfg.ReleaseTimeout = min(time.Second, p.TTL/3)

	newNode := func(name string, cli *clientv3.Client, wall leader.Clock) (*leader.Node, Clockwatch, error) {
		c := cfg
		c.Name = name
		d := leader.Deps{Etcd: cli, Store: store, Wall: wall, Recorder: leader.NewRecorder(name, true),
			Log: log.With("node", name)}
		var cw Clockwatch
		if sc.Clockwatch {
			var cerr error
			if cw, cerr = env.Clockwatch(nodesCtx, name); cerr != nil {
				return nil, nil, fmt.Errorf("clockwatch of node %s: %w", name, cerr)
			}
			d.Guard = cw.Guard()
		}
		n, nerr := leader.NewNode(c, d)
		return n, cw, nerr
	}
	wallA := &leader.SteppedClock{}
	nodeA, cwA, err := newNode("A", cliA, wallA)
	if err != nil {
		return res, err
	}
	nodeD, _, err := newNode("D", cliD, leader.SystemClock{})
	if err != nil {
		return res, err
	}

	g.Go(func() error { return nodeA.Run(nodesCtx) })
	warm := 20 * p.WriteInterval
	if err := waitFor(ctx, 30*time.Second, "A to lead and book", func() bool {
		s := nodeA.Stats()
		return s.Leading() && s.Landed > 0
	}); err != nil {
		return res, err
	}
	g.Go(func() error { return nodeD.Run(nodesCtx) })
	// Give D time to campaign and A time to book.
	if err := waitFor(ctx, 30*time.Second, "A to book a while", func() bool {
		return time.Since(nodeA.Stats().Terms[0].Start) > warm
	}); err != nil {
		return res, err
	}

	// The fault: A's keepalive stalls, A's wall clock steps, clockwatch sees it.
	t0 := time.Now()
	px.Pause()
	wallA.Step(p.Step)
	heal := time.AfterFunc(p.TTL+p.TTL/6, px.Resume) // stalled for longer than the TTL
	defer heal.Stop()
	if cwA != nil {
		if err := cwA.Step(ctx, p.Step, p.TTL+p.TTL/3); err != nil {
			return res, fmt.Errorf("announcing the step to A's clockwatch: %w", err)
		}
	}
	limit := p.TTL + -p.Step + 30*time.Second
	var dStart time.Time
	if err := waitFor(ctx, limit, "D to lead and A to stop", func() bool {
		a, d := nodeA.Stats(), nodeD.Stats()
		if len(d.Terms) > 0 && dStart.IsZero() {
			dStart = d.Terms[0].Start
		}
		return d.Leading() && !a.Leading() && time.Since(t0) > p.TTL+p.TTL/6
	}); err != nil {
		return res, err
	}
	if err := waitFor(ctx, 30*time.Second, "D to book", func() bool {
		return time.Since(dStart) > warm && nodeD.Stats().Landed > 0
	}); err != nil {
		return res, err
	}
	stopNodes()
	if err := g.Wait(); err != nil {
		return res, err
	}
	res.A, res.D, res.Fault = nodeA.Stats(), nodeD.Stats(), t0
	measure(&res, t0)
	if err := measureStore(ctx, store, &res); err != nil {
		return res, err
	}
	return res, nil
}

// measure fills in what the nodes' own records show.
func measure(res *Result, t0 time.Time) {
	for _, a := range res.A.Terms {
		for _, d := range res.D.Terms {
			res.DoubleLeader += overlap(a, d)
		}
	}
	for _, a := range res.A.Terms {
		if a.Start.Before(t0) && !a.End.Before(t0) {
			res.EventToStop = a.End.Sub(t0)
		}
	}
	if len(res.D.Terms) > 0 {
		dStart := res.D.Terms[0].Start
		res.LeaseToD = dStart.Sub(t0)
		for _, at := range res.A.Attempts {
			if !at.At.Add(at.Took).Before(dStart) {
				res.StaleAttempted += int64(at.Landed + at.Rejected)
				if at.Failed {
					res.StaleAttempted += int64(res.Params.Entries)
				}
			}
		}
	}
	res.Rejected = res.A.Rejected + res.D.Rejected
}

// overlap is how long two terms were open at once.
func overlap(a, b leader.Term) time.Duration {
	start := a.Start
	if b.Start.After(start) {
		start = b.Start
	}
	end := a.End
	if b.End.Before(end) {
		end = b.End
	}
	return max(0, end.Sub(start))
}

// measureStore counts, from the audit log, the writes that reached the table
// with a token older than the newest it had already seen.
func measureStore(ctx context.Context, store *leader.PGStore, res *Result) error {
	const q = `
SELECT count(*) FILTER (WHERE token < newest), count(*) FILTER (WHERE token < prev_token)
FROM (SELECT token, prev_token,
             max(token) OVER (ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS newest
      FROM ledger_log) AS l`
	if err := store.Pool().QueryRow(ctx, q).Scan(&res.StaleLanded, &res.Overwrote); err != nil {
		return fmt.Errorf("counting stale writes: %w", err)
	}
	return nil
}

// waitFor polls cond every 10 ms.
func waitFor(ctx context.Context, timeout time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting for %s: gave up after %s", what, timeout)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, context.Cause(ctx))
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

// RunAll runs every scenario in turn.
func RunAll(ctx context.Context, env Env, p Params, progress io.Writer) ([]Result, error) {
	var out []Result
	for _, sc := range Scenarios() {
		if progress != nil {
			fmt.Fprintf(progress, "run %q ...\n", sc.Name)
		}
		r, err := Run(ctx, env, p, sc)
		if err != nil {
			return out, fmt.Errorf("run %q: %w", sc.Name, err)
		}
		out = append(out, r)
	}
	return out, nil
}
