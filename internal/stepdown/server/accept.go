package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/clockwatch/clockwatch/internal/lane"
	"github.com/clockwatch/clockwatch/stepdown"
)

// Accepting (docs/stepdown-protocol.md, "Isolation"). The socket's backlog
// is shared by every peer, so the server takes connections from it in
// batches, each batch a turn of the daemon's lane (the queue of work other
// users can cause): a flood of connects costs the daemon at most the lane's
// share of the CPU. Each connection's SO_PEERCRED decides what follows:
// privileged peers (root, clockwatch's uid, stepdown.drill_uids) are admitted
// at once, after the turn; every other uid waits in a queue of its own, the
// queues admitted in turn (one connection of each uid, then the next), at
// most connectRate a second per uid after a burst of max_clients_per_uid.
// A connection whose peer has hung up by then is closed without a hello.
const (
	// acceptBatch and acceptTurn bound the connections taken from the
	// backlog in a turn, and the time spent taking them: a deep backlog is
	// drained in turns of about half a millisecond (a few µs each).
	acceptBatch = 256
	acceptTurn  = 500 * time.Microsecond
	// admitPerTurn is the most unprivileged connections admitted in a turn.
	admitPerTurn = 8
	// pendingPerUID bounds one uid's connections waiting for admission;
	// past it a connection is refused busy.
	pendingPerUID = 32
	// connectRate is how many connections a second one unprivileged uid
	// is admitted once its burst (max_clients_per_uid) is spent: each costs
	// the daemon goroutines and a hello outside the lane.
	connectRate = 1000
)

// incoming is an accepted connection before admission: a raw descriptor
// until it needs to be a *net.UnixConn.
type incoming struct {
	fd      int
	conn    *net.UnixConn
	cred    Cred
	credErr error
}

// unixConn makes the descriptor a *net.UnixConn (registered with Go's
// poller).
func (in *incoming) unixConn() (*net.UnixConn, error) {
	if in.conn != nil {
		return in.conn, nil
	}
	f := os.NewFile(uintptr(in.fd), "stepdown-client")
	c, err := net.FileConn(f) // a duplicate
	f.Close()
	in.fd = -1
	if err != nil {
		return nil, err
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("accepted a %T", c)
	}
	in.conn = uc
	return uc, nil
}

// hungUp reports whether the peer has closed its end already.
func (in *incoming) hungUp() bool {
	check := func(fd int) bool {
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN | unix.POLLRDHUP}}
		n, err := unix.Poll(p, 0)
		return err == nil && n > 0 && p[0].Revents&(unix.POLLHUP|unix.POLLRDHUP|unix.POLLERR) != 0
	}
	if in.conn == nil {
		return check(in.fd)
	}
	rc, err := in.conn.SyscallConn()
	if err != nil {
		return true
	}
	hup := false
	rc.Control(func(fd uintptr) { hup = check(int(fd)) })
	return hup
}

// close closes the connection without a word.
func (in *incoming) close() {
	if in.conn != nil {
		in.conn.Close()
		return
	}
	if in.fd >= 0 {
		unix.Close(in.fd)
		in.fd = -1
	}
}

// refuse tells the peer why it is not served, without waiting for it, then
// closes the connection.
func (s *Server) refuse(in *incoming, code, cause, why string) {
	b := stepdown.Message{Type: stepdown.TypeError, Code: code, Error: why}.AppendLine(nil)
	if in.conn != nil {
		s.reject(in.conn, code, cause, why)
		return
	}
	unix.Write(in.fd, b) // non-blocking: a full buffer loses the reason, not the daemon's time
	in.close()
	s.met.clientErrors.WithLabelValues(code).Inc()
	s.met.disconnects.WithLabelValues(cause).Inc()
}

// uidQueue is one unprivileged uid's connections waiting for admission, and
// its admission rate's token bucket.
type uidQueue struct {
	uid    uint32
	conns  []*incoming
	tokens float64
	last   time.Time
}

// refill adds the tokens earned since the last call and reports the time
// the next whole token is due (zero when one is there).
func (q *uidQueue) refill(now time.Time, burst float64) time.Time {
	q.tokens = min(burst, q.tokens+now.Sub(q.last).Seconds()*connectRate)
	q.last = now
	if q.tokens >= 1 {
		return time.Time{}
	}
	return now.Add(time.Duration((1 - q.tokens) / connectRate * float64(time.Second)))
}

// acceptor is the accept loop's state; only its goroutine touches it.
type acceptor struct {
	s     *Server
	queue map[uint32]*uidQueue
	order []uint32 // uids with connections waiting, served in turn
	next  int
}

// uidKey is the uid a connection counts under: peers without credentials
// share one.
func uidKey(cr Cred, credErr error) uint32 {
	if credErr != nil {
		return math.MaxUint32
	}
	return cr.UID
}

// acceptLoop accepts until ctx ends (nil) or the listener fails; laned:
// in turns of the lane (the public socket; the reserved one's peers are
// trusted not to flood).
func (s *Server) acceptLoop(ctx context.Context, l net.Listener, laned bool) error {
	ul := unixListener(l)
	if ul == nil {
		return s.acceptEach(l)
	}
	// A listener's own RawConn cannot wait (its Read is EINVAL): wait on a
	// duplicate of its descriptor, an *os.File in Go's poller, closed when
	// ctx ends.
	lrc, err := ul.SyscallConn()
	if err != nil {
		return err
	}
	dup := -1
	if cerr := lrc.Control(func(fd uintptr) { dup, err = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) }); cerr != nil {
		return cerr
	}
	if err != nil {
		return fmt.Errorf("duplicating the listening socket: %w", err)
	}
	f := os.NewFile(uintptr(dup), "stepdown-listener")
	defer f.Close()
	stop := context.AfterFunc(ctx, func() { f.Close() })
	defer stop()
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	a := &acceptor{s: s, queue: map[uint32]*uidQueue{}}
	defer a.closeAll()
	var backoff time.Duration
	for {
		// Wait for a connection, or for the next token of a uid with
		// connections waiting.
		due := a.nextDue(time.Now())
		if due.IsZero() || due.After(time.Now()) {
			f.SetReadDeadline(due)
			err := rc.Read(func(fd uintptr) bool { return readable(int(fd)) })
			if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
				if closed(err) || ctx.Err() != nil {
					return nil
				}
				return err
			}
		}
		var turn lane.Turn
		if laned {
			if turn, err = s.opts.Lane.Acquire(ctx, s.opts.LaneClass); err != nil {
				return nil
			}
		}
		var privileged []*incoming
		var acceptErr error
		cerr := rc.Control(func(fd uintptr) {
			began := time.Now()
			for i := 0; i < acceptBatch && (i%16 != 15 || time.Since(began) < acceptTurn); i++ {
				nfd, _, err := unix.Accept4(int(fd), unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
				if err != nil {
					if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.ECONNABORTED) && !errors.Is(err, unix.EINTR) {
						acceptErr = err
					}
					return
				}
				s.met.connections.Inc()
				in := &incoming{fd: nfd}
				if err := s.classify(in); err != nil {
					in.close()
					continue
				}
				if s.mayDrill(in.cred, in.credErr) {
					privileged = append(privileged, in)
					continue
				}
				a.enqueue(in)
			}
		})
		a.admitSome(time.Now())
		turn.Done()
		for _, in := range privileged {
			s.admit(in)
		}
		if cerr != nil {
			if closed(cerr) || ctx.Err() != nil {
				return nil
			}
			return cerr
		}
		if acceptErr != nil {
			// Out of file descriptors and the like: wait and retry rather
			// than give up on every subscriber.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.limit.Log(slog.LevelWarn, "accepting a stepdown client", "err", acceptErr, "retry_in", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
	}
}

// acceptEach serves a listener that is not a unix socket's (a test's):
// each connection admitted as it comes.
func (s *Server) acceptEach(l net.Listener) error {
	for {
		conn, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		s.met.connections.Inc()
		uc, ok := conn.(*net.UnixConn)
		if !ok {
			conn.Close()
			continue
		}
		in := &incoming{fd: -1, conn: uc}
		in.cred, in.credErr = s.opts.PeerCred(uc)
		s.admit(in)
	}
}

func unixListener(l net.Listener) *net.UnixListener {
	switch l := l.(type) {
	case *Listener:
		return l.UnixListener
	case *net.UnixListener:
		return l
	}
	return nil
}

func closed(err error) bool { return errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrClosed) }

// readable reports whether a connection waits in the backlog.
func readable(fd int) bool {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(p, 0)
	return err != nil || n > 0
}

// classify reads the peer's credentials, and refuses a peer the allow-list
// leaves out.
func (s *Server) classify(in *incoming) error {
	if s.customCred {
		uc, err := in.unixConn()
		if err != nil {
			return err
		}
		in.cred, in.credErr = s.opts.PeerCred(uc)
	} else {
		uc, err := unix.GetsockoptUcred(in.fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
		if err != nil {
			in.credErr = fmt.Errorf("reading SO_PEERCRED: %w", err)
		} else {
			in.cred = Cred{PID: uc.Pid, UID: uc.Uid, GID: uc.Gid}
		}
	}
	if in.credErr != nil {
		s.limit.Log(slog.LevelWarn, "stepdown client without credentials", "err", in.credErr)
	}
	if !s.allowed(in.cred, in.credErr) {
		s.limit.Log(slog.LevelWarn, "stepdown client not in stepdown.allow_uids/allow_gids", "pid", in.cred.PID, "uid", in.cred.UID, "gid", in.cred.GID)
		s.refuse(in, stepdown.CodeForbidden, CauseNotAllowed, "uid and gid not allowed by stepdown.allow_uids/allow_gids")
		return errors.New("not allowed")
	}
	return nil
}

// enqueue puts an unprivileged connection in its uid's queue, or refuses it
// when the queue is full.
func (a *acceptor) enqueue(in *incoming) {
	uid := uidKey(in.cred, in.credErr)
	q := a.queue[uid]
	if q == nil {
		q = &uidQueue{uid: uid, tokens: float64(a.s.cfg.MaxClientsPerUID), last: time.Now()}
		a.queue[uid] = q
	}
	if len(q.conns) >= pendingPerUID {
		a.s.limit.Log(slog.LevelWarn, "stepdown client refused: its uid connects faster than it is admitted", "pid", in.cred.PID, "uid", in.cred.UID)
		a.s.refuse(in, stepdown.CodeBusy, CauseTooManyClients,
			fmt.Sprintf("uid %d has %d connections waiting to be admitted (at most %d a second per uid)", in.cred.UID, len(q.conns), connectRate))
		return
	}
	if len(q.conns) == 0 {
		a.order = append(a.order, uid)
	}
	q.conns = append(q.conns, in)
}

// admitSome admits up to admitPerTurn waiting connections, one of each uid
// in turn, as their uids' tokens allow.
func (a *acceptor) admitSome(now time.Time) {
	burst := float64(a.s.cfg.MaxClientsPerUID)
	for n := 0; n < admitPerTurn && len(a.order) > 0; {
		progressed := false
		for i := 0; i < len(a.order) && n < admitPerTurn; {
			a.next %= len(a.order)
			q := a.queue[a.order[a.next]]
			if !q.refill(now, burst).IsZero() {
				a.next++
				i++
				continue
			}
			in := q.conns[0]
			q.conns[0] = nil
			q.conns = q.conns[1:]
			progressed = true
			if in.hungUp() {
				in.close()
				a.s.met.disconnects.WithLabelValues(CauseClientClosed).Inc()
			} else {
				n++
				if a.s.admit(in) {
					q.tokens--
				}
			}
			if len(q.conns) == 0 {
				a.order = append(a.order[:a.next], a.order[a.next+1:]...)
				if q.tokens >= burst {
					delete(a.queue, q.uid)
				}
			} else {
				a.next++
				i++
			}
		}
		if !progressed {
			return
		}
	}
	// Forget the buckets that are full again and have nothing waiting.
	if len(a.queue) > 64 {
		for uid, q := range a.queue {
			if len(q.conns) == 0 && q.refill(now, burst).IsZero() && q.tokens >= burst {
				delete(a.queue, uid)
			}
		}
	}
}

// nextDue is when a waiting connection may next be admitted: now when one
// may be now, zero when none waits.
func (a *acceptor) nextDue(now time.Time) time.Time {
	var due time.Time
	burst := float64(a.s.cfg.MaxClientsPerUID)
	for _, uid := range a.order {
		t := a.queue[uid].refill(now, burst)
		if t.IsZero() {
			return now
		}
		if due.IsZero() || t.Before(due) {
			due = t
		}
	}
	return due
}

func (a *acceptor) closeAll() {
	for _, q := range a.queue {
		for _, in := range q.conns {
			a.s.refuse(in, stepdown.CodeShuttingDown, CauseShutdown, "clockwatch is shutting down")
		}
	}
}
