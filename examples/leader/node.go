package leader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/clockwatch/clockwatch/stepdown"
)

// Booking is one write of the leader: Entries ledger entries booked under
// Token, the fencing token of the term.
type Booking struct {
	Node    string
	Token   int64
	Seq     int64
	Entries int
	// Fenced asks the store to refuse the write for any entry that has
	// already seen a newer token.
	Fenced bool
}

// Store is where the leader books. Book returns how many of the booking's
// entries landed; with Fenced the rest were refused by the fence.
type Store interface {
	Book(ctx context.Context, b Booking) (landed int, err error)
}

// Node is one instance of the service.
type Node struct {
	cfg   Config
	cli   *clientv3.Client
	store Store
	guard ClockGuard
	wall  Clock
	rec   *Recorder
	log   *slog.Logger
	seq   int64
}

// Deps are what a Node is built from. Guard is used only when
// Config.Clockwatch is set; Wall defaults to SystemClock, Recorder to one
// that does not keep attempts, Log to a discarding logger.
type Deps struct {
	Etcd     *clientv3.Client
	Store    Store
	Guard    ClockGuard
	Wall     Clock
	Recorder *Recorder
	Log      *slog.Logger
}

// NewNode returns a node; Run starts it.
func NewNode(cfg Config, d Deps) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("node config: %w", err)
	}
	if d.Etcd == nil || d.Store == nil {
		return nil, errors.New("node: an etcd client and a store are required")
	}
	n := &Node{cfg: cfg, cli: d.Etcd, store: d.Store, guard: noGuard{}, wall: d.Wall, rec: d.Recorder, log: d.Log}
	if cfg.Clockwatch {
		if d.Guard == nil {
			return nil, errors.New("node: clockwatch is on but no guard was given")
		}
		n.guard = d.Guard
	}
	if n.wall == nil {
		n.wall = SystemClock{}
	}
	if n.rec == nil {
		n.rec = NewRecorder(cfg.Name, false)
	}
	if n.log == nil {
		n.log = slog.New(slog.DiscardHandler)
	}
	return n, nil
}

// Stats returns what the node has done so far.
func (n *Node) Stats() Stats { return n.rec.Snapshot() }

// Run campaigns, leads, steps down and campaigns again until ctx is done.
func (n *Node) Run(ctx context.Context) error {
	for {
		if err := n.guard.WaitOK(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("waiting for a trustworthy clock: %w", err)
		}
		err := n.term(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			n.log.Warn("term ended", "node", n.cfg.Name, "err", err)
			select {
			case <-time.After(n.cfg.WriteInterval * 10):
			case <-ctx.Done():
				return nil
			}
		}
	}
}

// term is one round: get a lease, campaign, lead while the lease is believed
// and the clock trusted, release.
func (n *Node) term(ctx context.Context) error {
	gctx, gcancel := n.guard.Guard(ctx)
	defer gcancel()
	sess, err := concurrency.NewSession(n.cli,
		concurrency.WithTTL(int(n.cfg.TTL/time.Second)), concurrency.WithContext(gctx))
	if err != nil {
		return fmt.Errorf("creating etcd session: %w", err)
	}
	view := newLeaseView(n.cfg.LeaseClock, n.wall, n.cfg.TTL)
	go n.watchRenewals(gctx, sess.Lease(), view)
	e := concurrency.NewElection(sess, n.cfg.Election)
	// Campaign, when its context ends, cleans up with a Resign under the
	// client's own context, which waits as long as etcd is unreachable:
	// leave it behind (it ends with the client) and revoke the lease instead.
	campaign := make(chan error, 1)
	go func() { campaign <- e.Campaign(gctx, n.cfg.Name) }()
	select {
	case err := <-campaign:
		if err != nil {
			n.revoke(ctx, sess)
			return fmt.Errorf("campaigning under %s: %w", n.cfg.Election, err)
		}
	case <-gctx.Done():
		n.revoke(ctx, sess)
		return fmt.Errorf("campaigning under %s: %w", n.cfg.Election, context.Cause(gctx))
	}
	// The leader key's create revision: it grows with every new leader,
	// so the store can tell an old leader's writes from a new one's.
	token := e.Rev()
	reason := n.lead(gctx, token, view, sess)
	n.log.Info("stopped leading", "node", n.cfg.Name, "token", token, "reason", reason)
	n.release(ctx, e, sess)
	n.ack(context.Cause(gctx))
	return nil
}

// Acker is implemented by guards that take acknowledgements of a stepdown
// (clockwatch's *stepdown.Subscription does): the node acks once it has
// released its leadership.
type Acker interface {
	Ack(seq uint64) error
}

func (n *Node) ack(cause error) {
	var se *stepdown.StepdownError
	a, ok := n.guard.(Acker)
	if !ok || !errors.As(cause, &se) || se.Message.Type != stepdown.TypeStepdown {
		return
	}
	if err := a.Ack(se.Message.Seq); err != nil {
		n.log.Warn("acking the stepdown", "node", n.cfg.Name, "seq", se.Message.Seq, "err", err)
	}
}

// watchRenewals records every renewal etcd confirms and, when the node's
// keepalive is shorter than etcd client's TTL/3, renews more often itself.
func (n *Node) watchRenewals(ctx context.Context, id clientv3.LeaseID, v *leaseView) {
	ch, err := n.cli.KeepAlive(ctx, id)
	if err != nil {
		v.markLost()
		return
	}
	var tick <-chan time.Time
	if 3*n.cfg.KeepAlive < n.cfg.TTL {
		t := time.NewTicker(n.cfg.KeepAlive)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				v.markLost()
				return
			}
			v.renewed()
		case <-tick:
			kctx, cancel := context.WithTimeout(ctx, n.cfg.KeepAlive)
			if r, err := n.cli.KeepAliveOnce(kctx, id); err == nil && r.TTL > 0 {
				v.renewed()
			}
			cancel()
		case <-ctx.Done():
			return
		}
	}
}

// lead books until the node stops believing it leads, and says why.
func (n *Node) lead(ctx context.Context, token int64, v *leaseView, sess *concurrency.Session) (reason string) {
	n.rec.begin(token, n.wall.Now())
	defer func() { n.rec.end(n.wall.Now(), reason) }()
	n.log.Info("leading", "node", n.cfg.Name, "token", token)
	var lost <-chan struct{}
	if n.cfg.LeaseClock == LeaseClockMonotonic {
		lost = sess.Done()
	}
	t := time.NewTicker(n.cfg.WriteInterval)
	defer t.Stop()
	for {
		if !v.valid() {
			return "lease expired by the node's " + string(n.cfg.LeaseClock) + " clock"
		}
		n.book(ctx, token)
		select {
		case <-ctx.Done():
			return fmt.Sprint(context.Cause(ctx))
		case <-lost:
			return "etcd session lost"
		case <-t.C:
		}
	}
}

func (n *Node) book(ctx context.Context, token int64) {
	n.seq++
	b := Booking{Node: n.cfg.Name, Token: token, Seq: n.seq, Entries: n.cfg.Entries, Fenced: n.cfg.Fencing}
	a := Attempt{At: time.Now(), Token: token}
	landed, err := n.store.Book(ctx, b)
	a.Took = time.Since(a.At)
	if err != nil {
		a.Failed = true
		if ctx.Err() == nil {
			n.log.Warn("booking failed", "node", n.cfg.Name, "err", err)
		}
	} else {
		a.Landed, a.Rejected = landed, b.Entries-landed
	}
	n.rec.attempt(a, b.Entries)
}

// release resigns and revokes the lease, each bounded by ReleaseTimeout:
// when the node steps down because of its clock, etcd may be unreachable, and
// the lease then simply expires.
func (n *Node) release(ctx context.Context, e *concurrency.Election, sess *concurrency.Session) {
	base := context.WithoutCancel(ctx)
	rctx, cancel := context.WithTimeout(base, n.cfg.ReleaseTimeout)
	if err := e.Resign(rctx); err != nil {
		n.log.Debug("resign", "node", n.cfg.Name, "err", err)
	}
	cancel()
	n.revoke(ctx, sess)
}

// revoke ends the session and revokes its lease, bounded by ReleaseTimeout.
func (n *Node) revoke(ctx context.Context, sess *concurrency.Session) {
	sess.Orphan()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), n.cfg.ReleaseTimeout)
	defer cancel()
	if _, err := n.cli.Revoke(rctx, sess.Lease()); err != nil {
		n.log.Debug("revoke", "node", n.cfg.Name, "err", err)
	}
}
