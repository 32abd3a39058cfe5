package peers

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/clockwatch/clockwatch/stepdown"
)

// SourceName is the name the peers' readings carry: the source of
// peer_offset's conditions and events.
const SourceName = "peers"

// Options are a Service's inputs besides its configuration.
type Options struct {
	Logger *slog.Logger
	// Local says this node's stepdown state, clock epoch and error bound,
	// which the replies carry; nil: unknown.
	Local func() State
	// Kubernetes makes the Node lister for peers.kubernetes (called once
	// at Run); Self is this node's Node name, left out.
	Kubernetes func() (NodeLister, error)
	Self       string
	// Resolver, LocalAddrs, Exchanger and Conn replace the real ones
	// (tests); nil: the real ones (Conn: a socket on cfg.Listen).
	Resolver   Resolver
	LocalAddrs func() ([]netip.Addr, error)
	Exchanger  Exchanger
	Conn       PacketConn
	// Now is the wall clock of the replies' transmit timestamps; nil is
	// time.Now.
	Now func() time.Time
}

// Service is the fleet's clock on this node: it answers its peers, finds
// them, measures them every round and judges itself. It is a task (Run) and
// a time source (Reading): the majority judge's verdict.
type Service struct {
	cfg   Config
	opts  Options
	log   *slog.Logger
	agent uint64
	disc  *Discovery
	keys  Keys
	key   *Key
	allow []netip.Prefix

	mu       sync.Mutex
	resp     *Responder
	peers    []Peer
	allowed  map[netip.Addr]bool
	self     map[string]bool // peer addresses found to be this agent
	rounds   uint64
	last     []Result
	verdict  Verdict
	lastAt   time.Time
	totals   map[string]uint64 // exchanges by result, since the start
	placesOK map[string]bool   // discovery places, by their last refresh
	watch    *watchers
}

// New returns the service for cfg (valid, enabled); Run starts it.
func New(cfg Config, o Options) *Service {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Resolver == nil {
		o.Resolver = net.DefaultResolver
	}
	if o.LocalAddrs == nil {
		o.LocalAddrs = InterfaceAddrs
	}
	if o.Exchanger == nil {
		o.Exchanger = NTPExchanger{}
	}
	var b [8]byte
	rand.Read(b[:])
	s := &Service{cfg: cfg, opts: o, log: o.Logger, agent: binary.BigEndian.Uint64(b[:]), allow: cfg.Prefixes(),
		allowed: map[netip.Addr]bool{}, self: map[string]bool{}, totals: map[string]uint64{}, placesOK: map[string]bool{}}
	s.disc = &Discovery{Static: cfg.Static, DNS: cfg.DNS, Self: o.Self, Port: cfg.Port(), Resolver: o.Resolver, LocalAddrs: o.LocalAddrs}
	s.watch = newWatchers()
	return s
}

// local is what the replies say of this agent.
func (s *Service) local() State {
	st := State{State: stepdown.StateUnknown, Reason: stepdown.ReasonStarting}
	if s.opts.Local != nil {
		st = s.opts.Local()
	}
	st.Agent = s.agent
	return st
}

// isAllowed is the responder's allow-list: peers.allow, else the peers'
// own addresses.
func (s *Service) isAllowed(a netip.Addr) bool {
	if len(s.allow) > 0 {
		for _, p := range s.allow {
			if p.Contains(a) {
				return true
			}
		}
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.allowed[a]
}

// Run answers, finds and measures the peers until ctx is done. It fails
// when the socket cannot be opened, the key file read or the Kubernetes
// credentials found.
func (s *Service) Run(ctx context.Context) error {
	ks, k, err := s.cfg.Keys()
	if err != nil {
		return err
	}
	s.keys, s.key = ks, k
	if s.cfg.Kubernetes {
		if s.opts.Kubernetes == nil {
			return fmt.Errorf("peers.kubernetes: no Kubernetes client")
		}
		nl, err := s.opts.Kubernetes()
		if err != nil {
			return fmt.Errorf("peers.kubernetes: %w", err)
		}
		s.disc.Kubernetes = nl
	}
	conn := s.opts.Conn
	if conn == nil {
		if conn, err = ListenUDP(s.cfg.Listen); err != nil {
			return err
		}
	}
	resp := NewResponder(conn, ResponderOptions{Allowed: s.isAllowed, Keys: ks, Rate: s.cfg.RateLimit, Burst: s.cfg.Burst(),
		Local: s.local, Logger: s.log, Now: s.opts.Now})
	s.mu.Lock()
	s.resp = resp
	s.mu.Unlock()
	s.log.Info("peers: answering", "listen", conn.LocalAddr(), "static", len(s.cfg.Static), "dns", s.cfg.DNS,
		"kubernetes", s.cfg.Kubernetes, "authenticated", ks != nil)
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return resp.Run(ctx) })
	g.Go(func() error { s.loop(ctx); return nil })
	return g.Wait()
}

// Addr is the responder's address once Run has opened it (nil before).
func (s *Service) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.resp == nil {
		return nil
	}
	return s.resp.Addr()
}

func (s *Service) loop(ctx context.Context) {
	s.refresh(ctx)
	rounds := time.NewTicker(s.cfg.Interval)
	defer rounds.Stop()
	refresh := time.NewTicker(s.cfg.Refresh)
	defer refresh.Stop()
	for {
		s.round(ctx)
		select {
		case <-ctx.Done():
			return
		case <-refresh.C:
			s.refresh(ctx)
			select {
			case <-ctx.Done():
				return
			case <-rounds.C:
			}
		case <-rounds.C:
		}
	}
}

// refresh asks the discovery places again.
func (s *Service) refresh(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ps, err := s.disc.Refresh(ctx)
	allowed := map[netip.Addr]bool{}
	for _, p := range ps {
		if ap, perr := netip.ParseAddrPort(p.Addr); perr == nil {
			allowed[ap.Addr().Unmap()] = true
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.placesOK = s.disc.Places()
	if err != nil {
		s.log.Warn("peers: finding the peers", "err", err)
	}
	if len(ps) != len(s.peers) {
		s.log.Info("peers: found", "peers", len(ps))
	}
	s.peers, s.allowed = ps, allowed
}

// round measures this round's sample of the peers and judges.
func (s *Service) round(ctx context.Context) {
	s.mu.Lock()
	var candidates []Peer
	for _, p := range s.peers {
		if !s.self[p.Addr] {
			candidates = append(candidates, p)
		}
	}
	n := s.rounds
	s.rounds++
	s.mu.Unlock()
	pick := Pick(candidates, s.cfg.Sample, n, s.agent, func(p Peer) bool { return s.watch.watched(p) })
	results := Round(ctx, s.opts.Exchanger, pick, QuerierOptions{Exchanges: s.cfg.Exchanges, Spacing: spacing,
		Timeout: s.cfg.Timeout, MaxRTT: s.cfg.MaxRTT, Key: s.key})
	if ctx.Err() != nil {
		return
	}
	var kept []Result
	var ms []Measure
	s.mu.Lock()
	for _, r := range results {
		for k, v := range r.Exchanges {
			s.totals[k] += uint64(v)
		}
		if r.OK && r.Best.HasState && r.Best.State.Agent == s.agent {
			s.self[r.Peer.Addr] = true
			s.log.Info("peers: this address is this agent itself: no longer measured", "peer", r.Peer.Name, "addr", r.Peer.Addr)
			continue
		}
		kept = append(kept, r)
		if r.OK {
			m := Measure{Peer: r.Peer.Name, Offset: r.Best.Offset, RTT: r.Best.RTT}
			if r.Best.HasState && r.Best.State.HasErrorBound {
				m.PeerErrorBound, m.HasPeerErrorBound = r.Best.State.ErrorBound, true
			}
			ms = append(ms, m)
		}
	}
	v := Judge(ms, s.cfg.MaxOffset)
	if v.Outside != s.verdict.Outside || v.Decided != s.verdict.Decided {
		s.log.Info("peers: the judge's verdict", "decided", v.Decided, "outside", v.Outside, "measured", v.Measured,
			"disagreeing", strings.Join(v.Disagreeing, ","), "fleet_offset", v.FleetOffset)
	}
	s.last, s.verdict, s.lastAt = kept, v, time.Now()
	found := s.peers
	s.mu.Unlock()
	s.watch.update(found, kept)
}

// Reading is the majority judge's last verdict as a time source's reading:
// pending before the first round; down (the judge decides nothing) with
// fewer than two peers measured; else up, with the fleet's offset
// (this clock minus the fleet's median) and OutsideFleet.
func (s *Service) Reading() timesource.Reading {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := timesource.Reading{Source: SourceName, Role: timesource.SecondOpinion, JudgesFleet: true}
	if s.lastAt.IsZero() {
		return r
	}
	r.Found = true
	v := s.verdict
	if !v.Decided {
		r.Err = fmt.Errorf("%d of %d peers measured this round: the fleet's judge decides nothing with fewer than two", v.Measured, len(s.last))
		return r
	}
	r.Up, r.HasData, r.Synchronized, r.LastSuccess = true, true, true, s.lastAt
	r.Offset = -v.FleetOffset
	r.ErrorBound = timesource.Sum(r.Offset, v.Uncertainty)
	r.OutsideFleet = v.Outside
	r.Detail = fmt.Sprintf("%d of %d peers more than %s off", len(v.Disagreeing), v.Measured, s.cfg.MaxOffset)
	return r
}

// Notes says, for the health verdict, when this clock is outside the fleet.
func (s *Service) Notes() []timesource.Note {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.verdict.Outside {
		return nil
	}
	v := s.verdict
	return []timesource.Note{{Warning: true, Label: "peers", Text: fmt.Sprintf(
		"this clock disagrees with %d of the %d peers measured by more than peers.max_offset (%s): the fleet's median is %s from it (%s)",
		len(v.Disagreeing), v.Measured, s.cfg.MaxOffset, v.FleetOffset, strings.Join(v.Disagreeing, ", "))}}
}

// Snapshot is what the metrics show.
type Snapshot struct {
	// Results are the last round's, by peer name; Verdict its judgement.
	Results []Result
	Verdict Verdict
	// Rounded is set once a round has ended.
	Rounded bool
	// Peers is how many were found (less this agent).
	Peers int
	// Exchanges counts exchanges by result since the start; Requests the
	// requests answered and refused, in RequestResults' order.
	Exchanges map[string]uint64
	Requests  [requestResultsLength]uint64
	// Places is each configured discovery place's last refresh: worked.
	Places map[string]bool
}

// Snapshot returns the service's figures now.
func (s *Service) Snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := Snapshot{Results: slices.Clone(s.last), Verdict: s.verdict, Rounded: !s.lastAt.IsZero(),
		Exchanges: map[string]uint64{}, Places: map[string]bool{}}
	for _, p := range s.peers {
		if !s.self[p.Addr] {
			snap.Peers++
		}
	}
	for k, v := range s.totals {
		snap.Exchanges[k] = v
	}
	for k, v := range s.placesOK {
		snap.Places[k] = v
	}
	if s.resp != nil {
		snap.Requests = s.resp.Counts()
	}
	slices.SortFunc(snap.Results, func(a, b Result) int { return strings.Compare(a.Peer.Name, b.Peer.Name) })
	return snap
}
