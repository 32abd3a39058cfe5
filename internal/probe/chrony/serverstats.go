package chrony

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/clockwatch/clockwatch/internal/loop"
	fbchrony "github.com/facebook/time/ntp/chrony"
)

// The modes of chrony.server_stats.
const (
	// ServerStatsAuto reads the server side when chronyd serves: once it
	// has answered an NTP request or an NTS-KE connection (a pure client
	// answers none). Over UDP, where chronyd refuses serverstats, it stays
	// quiet.
	ServerStatsAuto = "auto"
	// ServerStatsOn always reads it; a refusal is an error.
	ServerStatsOn = "on"
	// ServerStatsOff never reads it.
	ServerStatsOff = "off"
)

// validateServerStats checks chrony.server_stats.
func validateServerStats(mode string) error {
	switch mode {
	case ServerStatsAuto, ServerStatsOn, ServerStatsOff:
		return nil
	}
	return fmt.Errorf("chrony.server_stats: must be auto, on or off, got %q", mode)
}

// ServerStats is what `chronyc serverstats` shows, from whichever reply
// version chronyd sends (chrony 4.3 sends version 3, 4.4 and later 4);
// counters the version lacks are zero.
type ServerStats struct {
	// Version is the reply's version, 1 to 4.
	Version int
	// NTPHits and NTPDrops count NTP requests answered and dropped (rate
	// limiting); NKEHits and NKEDrops the same for NTS-KE connections;
	// CmdHits and CmdDrops for command (chronyc) requests.
	NTPHits, NTPDrops, NKEHits, NKEDrops, CmdHits, CmdDrops uint64
	// LogDrops counts clients chronyd could not log for lack of memory
	// (clientloglimit).
	LogDrops uint64
	// NTPAuthHits counts authenticated (symmetric key or NTS) requests,
	// NTPInterleavedHits interleaved-mode requests.
	NTPAuthHits, NTPInterleavedHits uint64
	// NTPTimestamps is how many server timestamps are held for interleaved
	// mode, over NTPSpan.
	NTPTimestamps uint64
	NTPSpan       time.Duration
	// Rx and Tx timestamps of served requests by where they were taken
	// (version 4): daemon, kernel, hardware.
	DaemonRx, DaemonTx, KernelRx, KernelTx, HWRx, HWTx uint64
}

// Serving reports whether chronyd has served anyone.
func (s ServerStats) Serving() bool { return s.NTPHits > 0 || s.NKEHits > 0 }

func newServerStats(r fbchrony.ResponsePacket) (ServerStats, error) {
	switch r := r.(type) {
	case *fbchrony.ReplyServerStats:
		return ServerStats{Version: 1, NTPHits: uint64(r.NTPHits), CmdHits: uint64(r.CMDHits), NTPDrops: uint64(r.NTPDrops),
			CmdDrops: uint64(r.CMDDrops), LogDrops: uint64(r.LogDrops)}, nil
	case *fbchrony.ReplyServerStats2:
		return ServerStats{Version: 2, NTPHits: uint64(r.NTPHits), NKEHits: uint64(r.NKEHits), CmdHits: uint64(r.CMDHits),
			NTPDrops: uint64(r.NTPDrops), NKEDrops: uint64(r.NKEDrops), CmdDrops: uint64(r.CMDDrops), LogDrops: uint64(r.LogDrops),
			NTPAuthHits: uint64(r.NTPAuthHits)}, nil
	case *fbchrony.ReplyServerStats3:
		return ServerStats{Version: 3, NTPHits: uint64(r.NTPHits), NKEHits: uint64(r.NKEHits), CmdHits: uint64(r.CMDHits),
			NTPDrops: uint64(r.NTPDrops), NKEDrops: uint64(r.NKEDrops), CmdDrops: uint64(r.CMDDrops), LogDrops: uint64(r.LogDrops),
			NTPAuthHits: uint64(r.NTPAuthHits), NTPInterleavedHits: uint64(r.NTPInterleavedHits),
			NTPTimestamps: uint64(r.NTPTimestamps), NTPSpan: time.Duration(r.NTPSpanSeconds) * time.Second}, nil
	case *fbchrony.ReplyServerStats4:
		return ServerStats{Version: 4, NTPHits: r.NTPHits, NKEHits: r.NKEHits, CmdHits: r.CMDHits,
			NTPDrops: r.NTPDrops, NKEDrops: r.NKEDrops, CmdDrops: r.CMDDrops, LogDrops: r.LogDrops,
			NTPAuthHits: r.NTPAuthHits, NTPInterleavedHits: r.NTPInterleavedHits,
			NTPTimestamps: r.NTPTimestamps, NTPSpan: time.Duration(min(r.NTPSpanSeconds, 1<<32)) * time.Second,
			DaemonRx: r.NTPDaemonRxtimestamps, DaemonTx: r.NTPDaemonTxtimestamps, KernelRx: r.NTPKernelRxtimestamps,
			KernelTx: r.NTPKernelTxtimestamps, HWRx: r.NTPHwRxTimestamps, HWTx: r.NTPHwTxTimestamps}, nil
	}
	return ServerStats{}, fmt.Errorf("getting serverstats: unexpected reply %T", r)
}

// Commands of the server side (candm.h).
const (
	cmdServerStats    = 54
	cmdClientAccesses = 68
	// maxClientPages bounds the pages of `clients` one poll reads (8 clients
	// a page): a busy server's table is counted up to 8192 clients.
	maxClientPages = 1024
)

// ServerData is one read of chronyd's server side.
type ServerData struct {
	Stats ServerStats
	// Clients is the number of clients in chronyd's client log that sent
	// NTP requests or NTS-KE connections; ClientsTruncated is set when there
	// were more than one poll counts.
	Clients          int
	ClientsTruncated bool
}

// errServerStatsUDP is why auto mode reads nothing over UDP.
var errServerStatsUDP = errors.New("chronyd answers serverstats only on its unix socket")

// PollServer reads serverstats and counts the clients. Over UDP it returns
// errServerStatsUDP without asking (chronyd would refuse).
func (c *Client) PollServer(ctx context.Context) (ServerData, error) {
	if err := c.dial(ctx); err != nil {
		return ServerData{}, err
	}
	if c.transport == TransportUDP {
		return ServerData{}, fmt.Errorf("%w (%s is UDP): set chrony.address to chronyd's socket", errServerStatsUDP, c.address)
	}
	d, err := c.pollServer(ctx)
	if err != nil {
		c.Close()
		return d, err
	}
	_ = c.conn.SetDeadline(time.Time{}) // see Poll
	return d, nil
}

func (c *Client) pollServer(ctx context.Context) (ServerData, error) {
	var d ServerData
	r, err := c.communicate(ctx, &plainRequest{head(cmdServerStats)}, "serverstats")
	if err != nil {
		return d, err
	}
	if d.Stats, err = newServerStats(r); err != nil {
		return d, err
	}
	next := uint32(0)
	for page := 0; ; page++ {
		if page == maxClientPages {
			d.ClientsTruncated = true
			break
		}
		r, err := c.communicate(ctx, fbchrony.NewClientAccessesByIndexPacket(next, fbchrony.MaxClientAccessesByIndex, 0), "clients")
		if err != nil {
			return d, err
		}
		ca, ok := r.(*fbchrony.ReplyClientAccessesByIndex)
		if !ok {
			return d, fmt.Errorf("getting clients: unexpected reply %T", r)
		}
		for _, cl := range ca.Clients {
			if cl.NTPHits > 0 || cl.NKEHits > 0 {
				d.Clients++
			}
		}
		if ca.NClients == 0 || ca.NextIndex <= next || ca.NextIndex >= ca.NIndices {
			break
		}
		next = ca.NextIndex
	}
	return d, nil
}

// ServerSnapshot is the server-side poller's last result.
type ServerSnapshot struct {
	// Data is the last successful read; HaveData whether there was one.
	Data     ServerData
	HaveData bool
	// Serving reports whether the server side is exported: mode on, or
	// auto and chronyd has served someone.
	Serving bool
	// Tally counts the reads: Up and Err are the last read's outcome (in
	// auto mode over UDP Err wraps errServerStatsUDP and nothing is
	// exported); Failures only count when the server side is exported.
	loop.Tally
}

// ServerPoller reads chronyd's server side on its own connection and
// interval, apart from Poller, so that it never slows the tracking poll the
// stepdown triggers read. It is a task.
type ServerPoller struct {
	mode     string
	interval time.Duration
	client   *Client
	logger   *slog.Logger

	mu     sync.RWMutex
	snap   ServerSnapshot
	logged string
}

// serverStatsInterval is how often the server side is read: its figures
// are counters, and `clients` pages through the whole client log.
const serverStatsInterval = 10 * time.Second

// NewServerPoller returns the server-side poller, or nil in mode off.
func NewServerPoller(cfg Config, logger *slog.Logger) *ServerPoller {
	if cfg.ServerStats == ServerStatsOff {
		return nil
	}
	return newServerPoller(cfg.ServerStats, max(serverStatsInterval, cfg.PollInterval), NewClient(cfg, nil), logger)
}

func newServerPoller(mode string, interval time.Duration, c *Client, logger *slog.Logger) *ServerPoller {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &ServerPoller{mode: mode, interval: interval, client: c, logger: logger}
}

// Snapshot returns the last result; it never waits on chronyd.
func (p *ServerPoller) Snapshot() ServerSnapshot {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.snap
}

// Run polls until ctx is done.
func (p *ServerPoller) Run(ctx context.Context) error {
	defer p.client.Close()
	loop.Next(ctx, func(ctx context.Context) time.Duration {
		p.Poll(ctx)
		return p.nextPoll()
	})
	return nil
}

// nextPoll is the wait before the next read: the interval once the server
// side is exported, notServingRecheck before.
func (p *ServerPoller) nextPoll() time.Duration {
	if p.Snapshot().Serving {
		return p.interval
	}
	return max(notServingRecheck, p.interval)
}

// notServingRecheck is how often auto mode asks a chronyd that has served
// no one yet: most are pure clients, and the figures of one that starts
// serving are counters, lost by none of the wait.
const notServingRecheck = time.Minute

// Poll reads the server side once.
func (p *ServerPoller) Poll(ctx context.Context) {
	start := time.Now()
	d, err := p.client.PollServer(ctx)
	end := time.Now()
	p.mu.Lock()
	s := p.snap
	if err == nil {
		s.Data, s.HaveData = d, true
	}
	s.Serving = p.mode == ServerStatsOn || (s.HaveData && (s.Data.Stats.Serving() || s.Data.Clients > 0))
	if s.Serving {
		s.Count(start, end, err)
	} else {
		s.CountAbsent(start, end, err)
	}
	p.snap = s
	p.mu.Unlock()

	// A pure client, chronyd away (the tracking poller says so already) or
	// UDP in auto mode: quiet. A failure of an exported server side: once.
	msg := ""
	if err != nil && (p.mode == ServerStatsOn || s.Serving) {
		msg = err.Error()
	}
	switch {
	case msg != "" && msg != p.logged:
		p.logger.Warn("cannot read chronyd's server statistics", "err", err)
	case msg == "" && p.logged != "":
		p.logger.Info("chronyd's server statistics can be read again")
	}
	p.logged = msg
}
