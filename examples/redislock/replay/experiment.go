package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/clockwatch/clockwatch/examples/redislock"
	"github.com/clockwatch/clockwatch/examples/redislock/proxy"
	"github.com/clockwatch/clockwatch/stepdown"
)

// Fault is what happens to the master after the lock was taken.
type Fault string

const (
	// Kill: SHUTDOWN NOSAVE NOW, the article's drill (with NOW: see
	// Topology.KillMaster).
	Kill Fault = "master killed"
	// Isolate: a partition leaves the master and the lock holder on one
	// side, the replicas, the Sentinels and the other workers on the other
	// (a split brain once a replica is promoted).
	Isolate Fault = "master isolated with the holder"
)

// Scenario is one run.
type Scenario struct {
	Name        string
	Fault       Fault
	MinReplicas bool
	Epoch       redislock.Epoch
	// AcceptEqual swaps stepdown.Fence for a guard that lets an equal
	// epoch through (>=), to show what a counter that goes back does.
	AcceptEqual bool
}

// Scenarios are the runs: the incident, min-replicas-to-write on the same
// fault and in a split brain, the fence with an epoch from PostgreSQL on the
// same fault and in a split brain, and the fence with an epoch from Redis,
// then the same with a guard that accepts an equal epoch.
func Scenarios() []Scenario {
	return []Scenario{
		{Name: "none", Fault: Kill, Epoch: redislock.EpochNone},
		{Name: "min-replicas", Fault: Kill, MinReplicas: true, Epoch: redislock.EpochNone},
		{Name: "min-replicas, split brain", Fault: Isolate, MinReplicas: true, Epoch: redislock.EpochNone},
		{Name: "fence, PostgreSQL sequence", Fault: Kill, Epoch: redislock.EpochSequence},
		{Name: "fence, PostgreSQL sequence, split brain", Fault: Isolate, Epoch: redislock.EpochSequence},
		{Name: "fence, Redis INCR", Fault: Kill, Epoch: redislock.EpochRedisIncr},
		{Name: "fence accepting an equal epoch, Redis INCR", Fault: Kill, Epoch: redislock.EpochRedisIncr, AcceptEqual: true},
	}
}

// Params are the sizes and timings of a run.
type Params struct {
	// Workers is the number of job instances (the article's 6).
	Workers int
	// Orders is the day's unreconciled orders; PayEvery paces the
	// payments. The article's day had 23,000 orders, half of them paid
	// twice: a job about twice as long as the failover.
	Orders   int
	PayEvery time.Duration
	// Key, TTL: the lock, SET Key <uuid> NX PX TTL.
	Key string
	TTL time.Duration
	// RetryEvery is how often the workers without the lock try again.
	RetryEvery time.Duration
	// FaultAfter is the time from the lock to the fault (the article's
	// 180 ms).
	FaultAfter time.Duration
	// DownAfter, ParallelSyncs, MaxLag: the article's Sentinel and
	// min-replicas settings.
	DownAfter     time.Duration
	ParallelSyncs int
	MaxLag        int
	// Timeout bounds one run.
	Timeout time.Duration
}

// ArticleParams are the article's settings, with a day of 2,300 orders (a
// tenth of the article's) paced so that the job lasts about twice the
// failover, as the article's did.
func ArticleParams() Params {
	return Params{
		Workers: 6, Orders: 2300, PayEvery: 5 * time.Millisecond,
		Key: "comp:lock:recon:2025-09-14", TTL: 30 * time.Second, RetryEvery: 200 * time.Millisecond,
		FaultAfter: 180 * time.Millisecond, DownAfter: 5 * time.Second, ParallelSyncs: 1, MaxLag: 10,
		Timeout: 2 * time.Minute,
	}
}

// Env is what the runs share.
type Env struct {
	Tools Tools
	// DSN is the job's PostgreSQL database.
	DSN string
	// Dir holds each run's Redis files and logs.
	Dir string
	// Log receives the workers' logs (nil: discarded).
	Log *slog.Logger
}

// Lock is one lock a worker was granted, as the experiment saw it.
type Lock struct {
	redislock.Run
	// Since is the time from the fault (negative: before it).
	Since time.Duration
	// Late: granted after the day's job was done (after the end of the last
	// run that paid), and paid nothing. The workers still retrying take the
	// released lock in turn until the experiment stops them: such a run
	// finds no order left (or is stopped with the workers), so it is not
	// a second execution of the job. A run that paid is never late.
	Late bool
}

// markLate sets Late on every lock granted after the end of the last run
// that paid and that paid nothing itself; locks are in the order granted.
func markLate(locks []Lock) {
	var lastPaid time.Time
	for _, l := range locks {
		if l.Paid > 0 && l.End.After(lastPaid) {
			lastPaid = l.End
		}
	}
	for i := range locks {
		locks[i].Late = locks[i].Paid == 0 && !lastPaid.IsZero() && !locks[i].At.Before(lastPaid)
	}
}

// Result is what one run measured.
type Result struct {
	Scenario Scenario
	Params   Params
	// Locks are the locks granted, in order, with what their holders did.
	Locks []Lock
	Tally redislock.Tally
	// LockToFault is the time from the first lock to the fault.
	LockToFault time.Duration
	// SDown, ODown, Promotion: from the fault to the first Sentinel's
	// +sdown, +odown and +switch-master for the master.
	SDown, ODown, Promotion time.Duration
	// SecondLock is the time from the fault to the first lock granted to
	// another worker (0: none).
	SecondLock time.Duration
	// OldMasterWrites (Isolate only) is how long after the fault the old
	// master still accepted a write from a client on its side, and
	// OldMasterRefusal the error it answered afterwards ("" if it never
	// refused).
	OldMasterWrites  time.Duration
	OldMasterRefusal string
	// Events are the Sentinels' events.
	Events []string
	// Took is the whole run, the topology's start included.
	Took time.Duration
}

// Holders counts the distinct workers that were granted the lock.
func (r Result) Holders() int {
	seen := map[string]bool{}
	for _, l := range r.Locks {
		seen[l.Worker] = true
	}
	return len(seen)
}

// Outcomes counts the runs by outcome ("done", "fenced", "claim refused"),
// with two apart: the late ones as "late" whatever their outcome ("done"
// counts the executions of the job, not the empty runs of the workers that
// took the lock after it), and a run fenced after it outlived its lock's TTL
// as "fenced, lock expired" ("fenced" counts the holders stopped while
// their lock was still theirs: the failover's stale holder; a job slowed
// past the TTL, on a loaded machine, loses its lock to the next worker
// without any failover).
func (r Result) Outcomes() map[string]int {
	out := map[string]int{}
	for _, l := range r.Locks {
		switch {
		case l.Late:
			out["late"]++
		case l.Outcome == "fenced" && r.Params.TTL > 0 && l.End.Sub(l.At) > r.Params.TTL:
			out["fenced, lock expired"]++
		default:
			out[l.Outcome]++
		}
	}
	return out
}

// RunAll runs every scenario in order; progress, if set, gets a line per run.
func RunAll(ctx context.Context, env Env, p Params, scenarios []Scenario, progress io.Writer) ([]Result, error) {
	var out []Result
	for i, sc := range scenarios {
		r, err := Run(ctx, env, p, sc, i)
		if err != nil {
			return out, fmt.Errorf("run %q: %w", sc.Name, err)
		}
		if progress != nil {
			fmt.Fprintf(progress, "%s: %d orders paid twice, promotion %s after the fault, %s\n",
				sc.Name, r.Tally.PaidTwice, dur(r.Promotion), dur(r.Took))
		}
		out = append(out, r)
	}
	return out, nil
}

// Run runs one scenario on a fresh topology; n names its directory.
func Run(ctx context.Context, env Env, p Params, sc Scenario, n int) (Result, error) {
	began := time.Now()
	res := Result{Scenario: sc, Params: p}
	ctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	log := env.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("run", sc.Name)

	dir := filepath.Join(env.Dir, fmt.Sprintf("%d-%s", n+1, slug(sc.Name)))
	topo, err := StartTopology(ctx, env.Tools, dir, Settings{
		DownAfter: p.DownAfter, ParallelSyncs: p.ParallelSyncs, FailoverTimeout: 60 * time.Second,
		MinReplicas: sc.MinReplicas, MaxLag: p.MaxLag,
	})
	if err != nil {
		return res, err
	}
	defer topo.Stop()

	db, err := openDB(env.DSN)
	if err != nil {
		return res, err
	}
	defer db.Close()
	fence, err := stepdown.NewFence(stepdown.PostgreSQL, "")
	if err != nil {
		return res, err
	}
	var guard redislock.Guard = fence
	if sc.AcceptEqual {
		guard = equalEpochFence{}
	}
	if err := redislock.Migrate(ctx, db, fence); err != nil {
		return res, err
	}
	if err := redislock.Seed(ctx, db, stepdown.DefaultFenceTable, p.Orders); err != nil {
		return res, err
	}
	events, err := topo.WatchSentinels(ctx)
	if err != nil {
		return res, err
	}
	defer events.Close()

	// The replication link stalls before anyone takes the lock: the lock
	// will not reach the replicas before the fault.
	topo.ReplLink.Set(proxy.Frozen)

	var (
		mu      sync.Mutex
		granted []redislock.Holding
	)
	firstLock := make(chan redislock.Holding, 1)
	wctx, stopWorkers := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stopWorkers(); wg.Wait() }()
	var workers []*redislock.Worker
	for i := 1; i <= p.Workers; i++ {
		name := fmt.Sprintf("w%d", i)
		rdb := redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: MasterName, SentinelAddrs: topo.SentinelAddrs(), Dialer: topo.Net.Dialer(name),
			DialTimeout: 500 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond,
			MaxRetries: -1, PoolSize: 4,
		})
		defer rdb.Close()
		w, err := redislock.NewWorker(redislock.WorkerConfig{
			Name: name, Redis: rdb, DB: db, Key: p.Key, TTL: p.TTL, RetryEvery: p.RetryEvery, PayEvery: p.PayEvery,
			Epoch: sc.Epoch, Fence: guard, Log: log,
			OnLock: func(h redislock.Holding) {
				mu.Lock()
				granted = append(granted, h)
				mu.Unlock()
				select {
				case firstLock <- h:
				default:
				}
			},
		})
		if err != nil {
			return res, err
		}
		workers = append(workers, w)
	}
	for _, w := range workers {
		wg.Add(1)
		go func() { defer wg.Done(); w.Run(wctx) }()
	}

	var first redislock.Holding
	select {
	case first = <-firstLock:
	case <-ctx.Done():
		return res, fmt.Errorf("no worker got the lock: %w", ctx.Err())
	}
	time.Sleep(time.Until(first.At.Add(p.FaultAfter)))

	var fault time.Time
	var probe *oldMasterProbe
	switch sc.Fault {
	case Kill:
		if fault, err = topo.KillMaster(ctx); err != nil {
			return res, err
		}
		// What the dead master had not sent is lost with it.
		topo.ReplLink.Set(proxy.Cut)
	case Isolate:
		// The replication link stays stalled; the Sentinels lose the
		// master; the holder keeps its connection to the master and
		// loses the rest; the other workers lose the master.
		topo.SentinelLink.Set(proxy.Frozen)
		for i := range p.Workers {
			name := fmt.Sprintf("w%d", i+1)
			if name == first.Worker {
				topo.Net.Block(name, append(topo.SentinelAddrs(), topo.ReplicaAddrs()...)...)
			} else {
				topo.Net.Block(name, topo.Master.Addr)
			}
		}
		fault = time.Now()
		probe = startProbe(ctx, topo.Master.Client(), fault)
		defer probe.stop()
	default:
		return res, fmt.Errorf("unknown fault %q", sc.Fault)
	}
	res.LockToFault = fault.Sub(first.At)
	log.Info("fault", "fault", string(sc.Fault), "after_lock", res.LockToFault)

	// The run ends when every order is reconciled and no worker holds a
	// lock it is working under (and, in a split brain with min-replicas,
	// once the old master has refused a write or max-lag + 5 s have passed).
	finishedRuns := func() int {
		n := 0
		for _, w := range workers {
			n += len(w.Stats().Runs)
		}
		return n
	}
	err = poll(ctx, nil, p.Timeout, "the day's job", func(ctx context.Context) error {
		var left int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM orders WHERE NOT reconciled`).Scan(&left); err != nil {
			return err
		}
		mu.Lock()
		holding := len(granted)
		mu.Unlock()
		if running := holding - finishedRuns(); left > 0 || running > 0 {
			return fmt.Errorf("%d orders left, %d jobs running", left, running)
		}
		if probe != nil && sc.MinReplicas && !probe.refused() && time.Since(fault) < time.Duration(p.MaxLag+5)*time.Second {
			return errors.New("the old master still takes writes")
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	stopWorkers()
	wg.Wait()

	if probe != nil {
		probe.stop()
		res.OldMasterWrites, res.OldMasterRefusal = probe.result()
	}
	for _, w := range workers {
		for _, r := range w.Stats().Runs {
			res.Locks = append(res.Locks, Lock{Run: r, Since: r.At.Sub(fault)})
		}
	}
	slices.SortFunc(res.Locks, func(a, b Lock) int { return a.At.Compare(b.At) })
	markLate(res.Locks)
	for _, l := range res.Locks {
		if l.Worker != first.Worker && l.At.After(fault) {
			res.SecondLock = l.Since
			break
		}
	}
	if res.Tally, err = redislock.Count(ctx, db); err != nil {
		return res, err
	}
	since := func(event string) time.Duration {
		if t := events.First(event); !t.IsZero() {
			return t.Sub(fault)
		}
		return 0
	}
	res.SDown, res.ODown, res.Promotion = since("+sdown"), since("+odown"), since("+switch-master")
	res.Events = events.Lines()
	res.Took = time.Since(began)
	return res, nil
}

func slug(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		if r >= 'A' && r <= 'Z' {
			return r - 'A' + 'a'
		}
		return '-'
	}, s)
}

// oldMasterProbe writes to the isolated master every 50 ms, as a client on
// its side of the partition would, to see how long it takes writes.
type oldMasterProbe struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	fault    time.Time
	lastOK   time.Time
	firstErr string
}

func startProbe(ctx context.Context, cli *redis.Client, fault time.Time) *oldMasterProbe {
	ctx, cancel := context.WithCancel(ctx)
	p := &oldMasterProbe{cancel: cancel, done: make(chan struct{}), fault: fault}
	go func() {
		defer close(p.done)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			err := cli.Set(ctx, "replay:probe", i, 0).Err()
			p.mu.Lock()
			if err == nil {
				p.lastOK = time.Now()
			} else if p.firstErr == "" && ctx.Err() == nil {
				p.firstErr = err.Error()
			}
			p.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return p
}

func (p *oldMasterProbe) refused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.firstErr != ""
}

func (p *oldMasterProbe) stop() {
	p.cancel()
	<-p.done
}

func (p *oldMasterProbe) result() (time.Duration, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var d time.Duration
	if !p.lastOK.IsZero() {
		d = p.lastOK.Sub(p.fault)
	}
	return d, p.firstErr
}
