package socket

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"reflect"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/clockwatch/clockwatch/internal/announce"
	"github.com/clockwatch/clockwatch/internal/pulse"
	"github.com/clockwatch/clockwatch/stepdown"
)

// Limits on what a client may send.
const (
	// floodBurst and floodRate bound client messages: a token bucket of
	// floodBurst messages refilled at floodRate per second.
	floodBurst = 100
	floodRate  = 50
	// writeBatch is the most queued messages written in one system call.
	writeBatch = 64
	// defaultDrillHold is how long a drill holds unless the request says.
	defaultDrillHold = 5 * time.Second
	// sentRing is how many recent announcements remember when they were
	// sent, for the ack latency.
	sentRing = 64
	// clientSendBuffer is the SO_SNDBUF of each admitted client's socket
	// (Linux doubles it: 8 KiB, a handful of messages). The kernel charges
	// what a client has not read yet to the daemon's memory cgroup, and at
	// the default wmem_default (208 KiB, about 140 heartbeats) that, not
	// stepdown.queue_size, bounded a laggard: in the systemd VM test 4,000
	// subscribers a dozen heartbeats behind held 45–55 MB of socket buffers
	// and the daemon met the DaemonSet's memory.max of 128 MiB. With a small
	// buffer a laggard's backlog waits in its queue, whose lines every
	// subscriber shares, and the queue decides when it is cut off.
	clientSendBuffer = 4096
)

// Cred is a peer's SO_PEERCRED.
type Cred struct {
	PID      int32
	UID, GID uint32
}

// Options are the server's inputs besides its configuration.
type Options struct {
	// Logger receives connection logs; nil discards them.
	Logger *slog.Logger
	// Listener, when set, is used instead of systemd's socket or
	// cfg.Socket. The server closes it when Run returns.
	Listener net.Listener
	// ReservedListener, with Listener, is the reserved socket's (nil:
	// none); without Listener the server creates the reserved socket
	// itself (Config.ReservedSocket).
	ReservedListener net.Listener
	// PeerCred reads the credentials of the peer of an accepted
	// connection's descriptor; nil is PeerCred (SO_PEERCRED).
	PeerCred func(fd int) (Cred, error)
	// Getenv and PID are consulted for systemd socket activation; nil is
	// an empty environment (the server never reads the process's), 0
	// os.Getpid().
	Getenv func(string) string
	PID    int
	// SelfUID may ask for drills (besides root); 0 means os.Geteuid().
	SelfUID uint32
	// Pulse, when set, beats the heartbeat on the daemon's shared ticks
	// (the caller runs it); nil: Run runs a pulse of its own.
	Pulse *pulse.Pulse
	// Peers serves watch_peer; nil refuses it.
	Peers PeerWatcher
	// Busy is told when work another uid can cause competes with the
	// announcements: a refused connection, a fan-out to busyFanOut or
	// more clients (procs.Procs.Busy, which gives the daemon a second Go
	// processor meanwhile); nil: nobody.
	Busy func(why string)
}

// Server is the stepdown socket server: the unix-socket transport of an
// announcer. Create it with New and start it with Run; it announces what the
// announcer decides, fed by the daemon.
type Server struct {
	cfg  Config
	opts Options
	log  *slog.Logger
	met  *metrics
	// limit carries the lines a peer can cause (refusals, misbehaviour):
	// at most a few a minute of each kind. Connections log at debug.
	limit *logLimiter
	// keys are the protocol's JSON keys, matched exactly (checkKeys).
	keys map[string]bool

	ready chan struct{}
	l     net.Listener
	addr  string
	// rl is the reserved socket's listener (nil when off): only root,
	// clockwatch's uid and stepdown.reserved_group can connect, so no
	// other uid fills its accept queue, and its accepts are never paced.
	rl    net.Listener
	raddr string

	// ann decides and numbers what to announce; the server is its
	// unix-socket transport, subscribed in line (sub). The server never
	// calls ann with mu held: it keeps the state it greets and beats with
	// (snap) itself.
	ann *announce.Announcer
	sub *announce.Subscription

	mu sync.Mutex
	// snap is the announcer's state as the clients were last told it:
	// updated with each broadcast of announcements (update), so that a
	// hello's seq is the last event sent before it and every event after
	// it reaches the new client. since is when snap's state began.
	snap  announce.Snapshot
	since time.Time
	// sentAt is when each recent announcement was sent, for the ack
	// latency.
	sentAt [sentRing]struct {
		seq uint64
		at  time.Time
	}
	clients map[*client]struct{}
	// held counts the connections of each uid that admission limits
	// (admission.go), kept with clients by addLocked and removeLocked
	// under heldMu too (taken after mu), which alone the refusals take.
	heldMu sync.Mutex
	held   map[uint32]int
	// order is every client in the order broadcasts reach them (broadcast.go),
	// made again when clients come or go; a broadcast in progress keeps
	// the slice it started with.
	order    []*client
	nfirst   int    // how many of order are privileged (at its front)
	admitted uint64 // clients admitted so far: the next one's id
	// fan is the announcements on their way to the clients beyond the
	// privileged, oldest first; fanning, whether fanOut runs for them.
	// fanInLine is how many such clients an announcement reaches on the
	// announcing goroutine when nothing is queued (fanSlice; a test's
	// 0 sends every announcement through fanOut), and fanSliceHook, nil
	// but in tests, runs before each slice.
	fan          []*fanJob
	fanning      bool
	fanInLine    int
	fanSliceHook func()
	// busy is Options.Busy, never nil.
	busy func(why string)
	// lagged is the clients sendLocked removed as laggards, to be cut
	// off once mu is let go (unlock).
	lagged []*client
	// rate is the accept loop's own: each uid's connection rate.
	rate   connectRate
	closed bool
	// ownPulse is the pulse Run runs when Options gave none; pulse is the
	// one the heartbeat beats on (either).
	ownPulse *pulse.Pulse
	pulse    *pulse.Pulse

	// poller acts on the clients' input (Run makes it); readBuffers lend
	// it a buffer for the moment of a read (readBuffer).
	poller      *inputPoller
	readBuffers sync.Pool

	wg sync.WaitGroup
}

// New returns a server announcing what ann decides; it does not listen
// until Listen or Run.
func New(cfg Config, ann *announce.Announcer, opts Options) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.PeerCred == nil {
		opts.PeerCred = PeerCred
	}
	if opts.Getenv == nil {
		opts.Getenv = func(string) string { return "" }
	}
	if opts.PID == 0 {
		opts.PID = os.Getpid()
	}
	if opts.SelfUID == 0 {
		opts.SelfUID = uint32(os.Geteuid())
	}
	s := &Server{
		cfg: cfg, opts: opts, log: opts.Logger.With("component", "stepdown"),
		ready:   make(chan struct{}),
		clients: map[*client]struct{}{},
		held:    map[uint32]int{},
		rate:    newConnectRate(cfg.MaxClientsPerUID),
		ann:     ann,
		// One slice on the announcing goroutine: above it, the
		// writes would hold the next announcement back.
		fanInLine: fanSlice,
	}
	s.readBuffers.New = func() any { return new(readBuffer) }
	s.limit = newLogLimiter(s.log)
	if s.busy = opts.Busy; s.busy == nil {
		s.busy = func(string) {}
	}
	s.keys = protocolKeys()
	s.met = newMetrics(s)
	// In line: the latency from a step to the clients' sockets is the
	// point of the socket. The first update is the state now.
	s.sub = ann.Subscribe("stepdown", announce.InLine(s.update))
	if opts.Pulse == nil {
		s.ownPulse = pulse.New()
		opts.Pulse = s.ownPulse
	}
	s.pulse = opts.Pulse
	// Every heartbeat interval while a client is connected (an admission
	// wakes the pulse); without one the pulse may rest. The policy's
	// deadlines have their own timer in the announcer.
	s.pulse.EveryWhile(cfg.Heartbeat, s.beat, func() time.Duration {
		if s.Subscribers() > 0 {
			return 0
		}
		return pulse.Rest
	})
	return s, nil
}

// update sends each announcement to every client of the socket, in line
// with the announcer (each client's send only queues), and keeps the state
// they left for the hellos and heartbeats.
func (s *Server) update(u announce.Update) {
	s.mu.Lock()
	defer s.unlock()
	now := time.Now()
	for _, a := range u.Announcements {
		s.sentAt[a.Seq()%sentRing] = struct {
			seq uint64
			at  time.Time
		}{a.Seq(), now}
		s.announceLocked(a.Message.Type, a.Message.AppendLine(nil))
	}
	s.snap, s.since = u.Snapshot, now.Add(-u.Snapshot.For)
}

// Reload checks a new configuration. The socket's settings (socket, mode,
// group, heartbeat, limits) take effect at the next start; Reload reports
// whether any of them changed so the caller can log it. The policy's
// (hold-down, triggers) are the announcer's, which the daemon reloads: the
// hello tells the hold-down its update carries.
func (s *Server) Reload(cfg Config) (needsRestart bool, err error) {
	if err := cfg.Validate(); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return !reflect.DeepEqual(s.cfg, cfg), nil
}

// Collector returns the server's metrics.
func (s *Server) Collector() prometheus.Collector { return s.met }

// Ready is closed once Run has its socket (or failed to get it).
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Addr is the socket path, valid after Listen or Ready.
func (s *Server) Addr() string { return s.addr }

// ReservedAddr is the reserved socket's path ("" when off), valid after
// Listen or Ready.
func (s *Server) ReservedAddr() string { return s.raddr }

// Subscribers returns how many clients are connected.
func (s *Server) Subscribers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.clients)
}

// beat sends a heartbeat when a client is connected and Run is serving:
// an idle server has nothing to say and nobody to say it to.
func (s *Server) beat() {
	s.mu.Lock()
	n, closed := len(s.clients), s.closed
	s.mu.Unlock()
	if n > 0 && !closed {
		s.heartbeat()
	}
}

// Listen opens the socket now: the one passed by systemd under the name
// ActivationName, else Options.Listener, else cfg.Socket. A daemon calls it
// before starting its tasks, so that a socket problem fails the start; Run
// calls it when it has not been called.
func (s *Server) Listen() error {
	if s.l != nil {
		return nil
	}
	l, err := s.open()
	if err != nil {
		return fmt.Errorf("stepdown socket: %w", err)
	}
	rl := s.opts.ReservedListener
	if s.opts.Listener == nil {
		// Beside the socket clients dial, wherever it came from
		// (systemd's too: the reserved one is clockwatch's own, absent
		// while it restarts, and clients then take the public one).
		r, err := listenReserved(s.cfg, l.Addr().String())
		if err != nil {
			l.Close()
			return fmt.Errorf("stepdown socket: %w; or set stepdown.reserved_socket: %s", err, ReservedOff)
		}
		if r != nil {
			rl = r
		} else if s.cfg.ReservedSocket == "" {
			s.log.Warn("no reserved stepdown socket: the path beside the stepdown socket is longer than a unix socket's may be (107 bytes); root's and clockwatch's connections may wait behind a flood",
				"path", stepdown.ReservedPath(l.Addr().String()))
		}
	}
	s.l = l
	s.addr = l.Addr().String()
	if rl != nil {
		s.rl, s.raddr = rl, rl.Addr().String()
	}
	s.log.Info("stepdown socket listening", "path", s.addr, "reserved", s.raddr)
	return nil
}

func (s *Server) open() (net.Listener, error) {
	if s.opts.Listener != nil {
		return s.opts.Listener, nil
	}
	l, ok, err := Activated(s.opts.Getenv, s.opts.PID)
	if err != nil {
		return nil, err
	}
	if ok {
		s.log.Info("using the stepdown socket passed by systemd", "addr", l.Addr())
		return l, nil
	}
	return Listen(s.cfg)
}

// Run serves: it accepts clients (heartbeats go out every
// stepdown.heartbeat while one is connected) until ctx is done, then
// closes every connection and the socket (removing the file it created).
func (s *Server) Run(ctx context.Context) error {
	err := s.Listen()
	close(s.ready)
	if err != nil {
		return err
	}
	closeListeners := func() {
		s.l.Close()
		if s.rl != nil {
			s.rl.Close()
		}
	}
	p, err := newInputPoller()
	if err != nil {
		closeListeners()
		return fmt.Errorf("stepdown socket: %w", err)
	}
	// The stepdown socket's refusals are paced (a flood waits in its
	// backlog); the reserved socket's never are: only trusted peers
	// reach its backlog.
	type loop struct {
		l     net.Listener
		paced bool
	}
	loops := []loop{{s.l, true}}
	if s.rl != nil {
		loops = append(loops, loop{s.rl, false})
	}
	var acceptors []*acceptor
	for _, lp := range loops {
		a, err := newAcceptor(lp.l)
		if err != nil {
			for _, a := range acceptors {
				a.close()
			}
			closeListeners()
			p.close()
			return fmt.Errorf("stepdown socket: %w", err)
		}
		acceptors = append(acceptors, a)
	}
	s.poller = p
	s.wg.Go(p.run)

	acceptErr := make(chan error, len(acceptors))
	for i, a := range acceptors {
		go func() { acceptErr <- s.acceptLoop(a, loops[i].paced) }()
	}
	running := len(acceptors)

	defer s.sub.Close()
	if s.ownPulse != nil {
		pctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { s.ownPulse.Run(pctx); close(done) }()
		defer func() { stop(); <-done }()
	}
	var runErr error
	select {
	case <-ctx.Done():
	case err := <-acceptErr:
		if err == nil {
			err = errors.New("listener closed")
		}
		runErr = fmt.Errorf("stepdown socket: accepting: %w", err)
		running--
	}
	closeListeners()
	for _, a := range acceptors {
		a.close()
	}
	for range running {
		<-acceptErr
	}
	s.mu.Lock()
	s.closed = true
	for c := range s.clients {
		s.removeLocked(c)
		c.shutdown(CauseShutdown)
	}
	s.mu.Unlock()
	if err := p.close(); err != nil && runErr == nil {
		runErr = fmt.Errorf("stepdown socket: closing the clients' epoll instance: %w", err)
	}
	s.wg.Wait()
	return runErr
}
