package redislock

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/clockwatch/clockwatch/stepdown"
)

// Epoch says where a worker's fencing epoch comes from.
type Epoch string

const (
	// EpochNone: no fence, the article's job as it ran on the day.
	EpochNone Epoch = "none"
	// EpochSequence: nextval of a PostgreSQL sequence, which never goes
	// back.
	EpochSequence Epoch = "postgresql sequence"
	// EpochRedisIncr: INCR of a counter next to the lock, on the same
	// master; it is lost with the lock.
	EpochRedisIncr Epoch = "redis INCR"
)

// Guard is the data side's guard: *stepdown.Fence.
type Guard interface {
	Claim(ctx context.Context, db stepdown.Execer, resource string, epoch int64) error
	Check(ctx context.Context, tx stepdown.Execer, resource string, epoch int64) error
}

var _ Guard = (*stepdown.Fence)(nil)

// WorkerConfig is one instance of the job.
type WorkerConfig struct {
	Name string
	// Redis is the worker's client; the replay gives each worker its own
	// Sentinel-aware client (redis.NewFailoverClient).
	Redis Redis
	DB    *sql.DB
	// Key is the lock's key, comp:lock:recon:<date>.
	Key string
	// TTL is the lock's PX (30 s).
	TTL time.Duration
	// RetryEvery is how often a worker that did not get the lock tries
	// again.
	RetryEvery time.Duration
	// PayEvery paces the payments (a call to the payment service each).
	PayEvery time.Duration
	// Epoch and Fence guard the payments; Fence is needed unless Epoch is
	// EpochNone.
	Epoch Epoch
	Fence Guard
	// ServerClock, if set, watches the clock of the lock server's node
	// (PeerWatch): the job stops before its next payment when that clock
	// steps or cannot be trusted, and the worker tries for the lock again
	// once it is trusted.
	ServerClock ServerClock
	// OnLock, if set, is called the moment SET NX answers OK.
	OnLock func(Holding)
	Log    *slog.Logger
}

// Holding is one lock the worker was granted.
type Holding struct {
	Worker string
	Owner  string
	At     time.Time
	// Master is the port of the Redis that granted it ("" if unknown).
	Master string
}

// Run is what a worker did with one lock it was granted.
type Run struct {
	Holding
	Epoch int64
	// Outcome is "done" (the job ran to the end), "claim refused" (the
	// fence knew an equal or newer epoch), "fenced" (a newer holder
	// claimed during the job), "stopped" (the lock server's clock stepped
	// or could not be trusted: ServerClock), or an error.
	Outcome string
	// Listed is how many unreconciled orders the job read; Paid how many
	// it paid.
	Listed, Paid int
	End          time.Time
}

// Stats is what a worker did.
type Stats struct {
	Worker string
	Runs   []Run
	// Tries counts SET NX attempts; Errors those that failed (a dead or
	// unreachable master).
	Tries, Errors int
}

// Worker runs the job when it gets the lock.
type Worker struct {
	cfg   WorkerConfig
	owner string
	lock  *Lock
	log   *slog.Logger

	mu    sync.Mutex
	stats Stats
}

// NewWorker returns a worker with a fresh owner UUID.
func NewWorker(cfg WorkerConfig) (*Worker, error) {
	if cfg.Epoch == "" {
		cfg.Epoch = EpochNone
	}
	switch cfg.Epoch {
	case EpochNone:
	case EpochSequence, EpochRedisIncr:
		if cfg.Fence == nil {
			return nil, fmt.Errorf("worker %s: epoch %q needs a fence", cfg.Name, cfg.Epoch)
		}
	default:
		return nil, fmt.Errorf("worker %s: unknown epoch source %q", cfg.Name, cfg.Epoch)
	}
	if cfg.Redis == nil || cfg.DB == nil || cfg.Key == "" || cfg.TTL <= 0 || cfg.RetryEvery <= 0 {
		return nil, fmt.Errorf("worker %s: Redis, DB, Key, TTL and RetryEvery are required", cfg.Name)
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	owner := rand.Text()
	return &Worker{cfg: cfg, owner: owner, lock: NewLock(cfg.Redis, cfg.Key, owner, cfg.TTL),
		log: log.With("worker", cfg.Name), stats: Stats{Worker: cfg.Name}}, nil
}

// Stats returns what the worker has done so far.
func (w *Worker) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.stats
	s.Runs = append([]Run(nil), s.Runs...)
	return s
}

// Run tries for the lock every RetryEvery until it gets it and the job ends
// (done, or fenced by a newer holder), or ctx is done. A claim the fence
// refuses, or a job stopped by the lock server's clock, gives the lock back
// and tries again.
func (w *Worker) Run(ctx context.Context) Stats {
	t := time.NewTicker(w.cfg.RetryEvery)
	defer t.Stop()
	for ctx.Err() == nil {
		// A lock server whose clock cannot be trusted grants locks that may
		// be gone at once: wait until it can.
		if w.cfg.ServerClock == nil || w.cfg.ServerClock.Trusted() {
			run, got := w.try(ctx)
			if got && run.Outcome != "claim refused" && run.Outcome != "stopped" {
				break
			}
		}
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
	return w.Stats()
}

// try asks for the lock once and, when granted, runs the job under it.
func (w *Worker) try(ctx context.Context) (Run, bool) {
	ok, err := w.lock.TryAcquire(ctx)
	w.mu.Lock()
	w.stats.Tries++
	if err != nil {
		w.stats.Errors++
	}
	w.mu.Unlock()
	if err != nil && ctx.Err() == nil {
		w.log.Debug("lock attempt failed", "err", err)
	}
	if !ok {
		return Run{}, false
	}
	h := Holding{Worker: w.cfg.Name, Owner: w.owner, At: time.Now()}
	if w.cfg.OnLock != nil {
		w.cfg.OnLock(h)
	}
	run := w.hold(ctx, h)
	w.mu.Lock()
	w.stats.Runs = append(w.stats.Runs, run)
	w.mu.Unlock()
	return run, true
}

// hold runs the job under a lock just granted, then releases it.
func (w *Worker) hold(ctx context.Context, h Holding) Run {
	run := Run{Holding: h}
	// The lock lives as long as the lock server's clock says: the job runs
	// only while that clock is trusted and has not stepped since the lock
	// was granted (a step there expires the key at once).
	jobCtx := ctx
	if w.cfg.ServerClock != nil {
		var stop context.CancelFunc
		jobCtx, stop = w.cfg.ServerClock.Guard(ctx)
		defer stop()
	}
	// Which master granted it, for the log (both logs of the incident say
	// "got the lock"; here they also say where).
	if port, err := w.cfg.Redis.ConfigGet(ctx, "port").Result(); err == nil {
		run.Master = port["port"]
	}
	epoch, err := w.epoch(ctx)
	if err != nil {
		run.Outcome, run.End = err.Error(), time.Now()
		w.log.Info("got the lock but no epoch", "key", w.cfg.Key, "owner", w.owner, "master_port", run.Master, "err", err)
		w.release(ctx)
		return run
	}
	run.Epoch = epoch
	w.log.Info("got the lock", "key", w.cfg.Key, "owner", w.owner, "master_port", run.Master, "epoch", epoch)
	err = w.reconcile(jobCtx, &run)
	run.End = time.Now()
	var clockErr *ServerClockError
	switch {
	case err == nil:
		run.Outcome = "done"
	case errors.Is(err, stepdown.ErrFenced):
		var fe *stepdown.FencedError
		if errors.As(err, &fe) && fe.Op == "claim" {
			run.Outcome = "claim refused"
		} else {
			run.Outcome = "fenced"
		}
	case errors.As(context.Cause(jobCtx), &clockErr):
		run.Outcome = "stopped"
		err = clockErr
	default:
		run.Outcome = err.Error()
	}
	w.log.Info("job ended", "outcome", run.Outcome, "listed", run.Listed, "paid", run.Paid, "epoch", epoch, "err", err)
	w.release(ctx)
	return run
}

func (w *Worker) epoch(ctx context.Context) (int64, error) {
	switch w.cfg.Epoch {
	case EpochSequence:
		var e int64
		if err := w.cfg.DB.QueryRowContext(ctx, `SELECT nextval('comp_lock_epoch')`).Scan(&e); err != nil {
			return 0, fmt.Errorf("epoch from the sequence: %w", err)
		}
		return e, nil
	case EpochRedisIncr:
		return w.lock.IncrEpoch(ctx)
	}
	return 0, nil
}

func (w *Worker) release(ctx context.Context) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	held, err := w.lock.Release(rctx)
	w.log.Debug("released the lock", "held", held, "err", err)
}

// reconcile is the job: read the unreconciled orders, pay each once. With a
// fence it claims first (so that what it reads is what any earlier holder
// left), then checks the claim in every payment's transaction.
func (w *Worker) reconcile(ctx context.Context, run *Run) error {
	fenced := w.cfg.Epoch != EpochNone
	if fenced {
		if err := w.cfg.Fence.Claim(ctx, w.cfg.DB, w.cfg.Key, run.Epoch); err != nil {
			return err
		}
	}
	type order struct{ id, cents int64 }
	var orders []order
	rows, err := w.cfg.DB.QueryContext(ctx, `SELECT id, amount_cents FROM orders WHERE NOT reconciled ORDER BY id`)
	if err != nil {
		return fmt.Errorf("listing the unreconciled orders: %w", err)
	}
	for rows.Next() {
		var o order
		if err := rows.Scan(&o.id, &o.cents); err != nil {
			rows.Close()
			return fmt.Errorf("listing the unreconciled orders: %w", err)
		}
		orders = append(orders, o)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("listing the unreconciled orders: %w", err)
	}
	run.Listed = len(orders)
	var pace <-chan time.Time
	if w.cfg.PayEvery > 0 {
		t := time.NewTicker(w.cfg.PayEvery)
		defer t.Stop()
		pace = t.C
	}
	for _, o := range orders {
		if err := w.pay(ctx, run.Epoch, fenced, o.id, o.cents); err != nil {
			return err
		}
		run.Paid++
		if pace != nil {
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-pace:
			}
		}
	}
	return nil
}

// pay books one payment and marks the order reconciled, in one transaction
// that, when fenced, first checks that this epoch still owns the job.
func (w *Worker) pay(ctx context.Context, epoch int64, fenced bool, id, cents int64) error {
	tx, err := w.cfg.DB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("paying order %d: %w", id, err)
	}
	defer tx.Rollback()
	if fenced {
		if err := w.cfg.Fence.Check(ctx, tx, w.cfg.Key, epoch); err != nil {
			return err
		}
	}
	var e any
	if fenced {
		e = epoch
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO pay_comp_flow (order_id, amount_cents, worker, epoch) VALUES ($1, $2, $3, $4)`,
		id, cents, w.cfg.Name, e); err != nil {
		return fmt.Errorf("paying order %d: %w", id, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE orders SET reconciled = true WHERE id = $1`, id); err != nil {
		return fmt.Errorf("marking order %d reconciled: %w", id, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("paying order %d: %w", id, err)
	}
	return nil
}
