package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/clockwatch/clockwatch/internal/stepdown/policy"
	"github.com/clockwatch/clockwatch/internal/stepdown/server"
	"github.com/clockwatch/clockwatch/probe"
	"github.com/clockwatch/clockwatch/step"
	"github.com/clockwatch/clockwatch/timesource"
)

// stepEventBuffer is how many step events the stepdown feed may fall behind.
const stepEventBuffer = 1024

// startPoll is how often the readings are looked at while the start waits
// for a source's first poll.
const startPoll = 20 * time.Millisecond

// ClocksSource is the name the clock sampler reports under: its first
// sample (with any step seen at restart) is part of the evidence the state
// waits for at start.
const ClocksSource = "clocks"

// JournalSource is the probe name of the journal: while the epoch is not
// durable it is a lost probe (reason probe_lost, source journal).
const JournalSource = "journal"

// Stepdown is the stepdown server with its inputs wired: step events from
// the bus, and each poll of the kernel and the time sources.
type Stepdown struct {
	Server *server.Server
	sub    interface {
		C() <-chan step.Event
		Close()
	}
	timex   probe.TimexReader
	sources func() timesource.Set
	steps   *Steps
	poll    time.Duration
	log     *slog.Logger
	// WriteDelay is the latency from a clock-set mark to the stepdown
	// message having been written to the subscribers' sockets; register it.
	WriteDelay *WriteDelay
}

// MetricStepdownWriteDelay is the name of WriteDelay's histogram.
const MetricStepdownWriteDelay = "clockwatch_stepdown_write_delay_seconds"

// WriteDelay exports the mark → socket write latency as a histogram.
type WriteDelay struct {
	h    step.Histogram
	desc *prometheus.Desc
}

// Describe implements prometheus.Collector.
func (w *WriteDelay) Describe(ch chan<- *prometheus.Desc) { ch <- w.desc }

// Collect implements prometheus.Collector.
func (w *WriteDelay) Collect(ch chan<- prometheus.Metric) {
	n, sum, buckets := w.h.Snapshot()
	ch <- prometheus.MustNewConstHistogram(w.desc, n, sum, buckets)
}

// NewStepdown builds the server and opens its socket, so a socket that
// cannot be opened fails the start with a message that says why. sources
// returns the readings of the enabled time sources, names those the start
// waits for (besides the clocks and the kernel); stateDir keeps the policy's
// state across restarts (empty: not kept).
func NewStepdown(cfg server.Config, steps *Steps, timex probe.TimexReader, sources func() timesource.Set,
	names []string, stateDir string, poll time.Duration, logger *slog.Logger) (*Stepdown, error) {
	cfg = cfg.Resolve(os.Getenv)
	opts := server.Options{Logger: logger, Epoch: steps.Journal.State().Epoch,
		Await: append([]string{ClocksSource, JournalSource, probe.KernelSource}, names...)}
	if stateDir != "" {
		opts.StatePath = filepath.Join(stateDir, server.StateFile)
	}
	srv, err := server.New(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("stepdown socket: %w", err)
	}
	if err := srv.Listen(); err != nil {
		return nil, fmt.Errorf("%w; set stepdown.socket to a writable path (or RUNTIME_DIRECTORY), or stepdown.enabled: false", err)
	}
	if sources == nil {
		sources = func() timesource.Set { return timesource.Set{} }
	}
	wd := &WriteDelay{desc: prometheus.NewDesc(MetricStepdownWriteDelay,
		"Latency from the kernel's clock-set notification (the watcher's CLOCK_MONOTONIC read) to the stepdown message of the step it revealed having been written to the subscribers' sockets (those whose buffer had room; the others get it from their queue), counted only when a subscriber was connected.",
		nil, nil)}
	return &Stepdown{Server: srv, sub: steps.Durable.Subscribe(stepEventBuffer), timex: timex, sources: sources,
		steps: steps, poll: poll, log: logger, WriteDelay: wd}, nil
}

// Tasks are the server itself and its feed.
func (s *Stepdown) Tasks() []func(context.Context) error {
	return []func(context.Context) error{s.Server.Run, s.feed}
}

// feed hands the server every step event once the journal has written it
// and, every poll interval, the journal's state and the readings of the
// kernel and the time sources, in one goroutine: so the clocks' evidence
// (the sampler's first sample) reaches the policy only after the events of
// that sample, a step seen at restart included.
func (s *Stepdown) feed(ctx context.Context) error {
	defer s.sub.Close()
	ready := s.steps.FirstSampleDurable()
	var tick, fast <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-s.sub.C():
			if !ok {
				return nil
			}
			s.apply(e)
		case <-ready:
			ready = nil
			// The first sample's events were published on the durable
			// bus before this closed: apply them first.
			for drained := false; !drained; {
				select {
				case e := <-s.sub.C():
					s.apply(e)
				default:
					drained = true
				}
			}
			s.Server.ProbeOK(ClocksSource)
			t := time.NewTicker(s.poll)
			defer t.Stop()
			tick = t.C
			s.pollOnce()
			if s.Server.Starting() {
				fast = time.After(startPoll)
			}
		case <-fast:
			// Until every source's first poll is in, look more often
			// than the poll interval: the start waits on them.
			s.pollOnce()
			if s.Server.Starting() {
				fast = time.After(startPoll)
			}
		case <-tick:
			s.pollOnce()
		}
	}
}

// pollOnce feeds the journal's state and the readings of the kernel and the
// time sources.
func (s *Stepdown) pollOnce() {
	s.journalProbe()
	s.Server.Readings(s.read())
}

// apply turns one detector event into a stepdown input. Events arrive once
// the journal has written them; when it could not, the journal probe fails
// first, so the epoch is not announced as if it were durable.
func (s *Stepdown) apply(e step.Event) {
	if !s.steps.Journal.Persistent() { // an atomic: the journal may still hold its lock
		s.journalProbe() // the good news waits for the next poll
	}
	switch e.Type {
	case step.TypeStep:
		s.Server.Step(policy.Step{Seconds: e.Step.Seconds(), Mono: time.Duration(e.Mono), WallBefore: e.WallBefore,
			WallAfter: e.WallAfter, Epoch: e.Epoch, How: e.Seen.String()})
		// Step writes to every subscriber whose socket has room before it
		// returns.
		if e.MarkMono != 0 && s.Server.Subscribers() > 0 {
			s.WriteDelay.h.Observe(time.Duration(probe.MonotonicNow() - e.MarkMono))
		}
	case step.TypeResume:
		s.Server.Suspended(e.Suspended)
	}
}

// journalProbe tells the policy whether the epoch is being persisted: while
// it is not, a restart could announce an older epoch (or the same one for a
// new step), so clockwatch cannot vouch for fencing tokens and the journal
// counts as a lost probe (reason probe_lost, source journal).
func (s *Stepdown) journalProbe() {
	if err := s.steps.Journal.Err(); err != nil {
		s.Server.ProbeFailed(JournalSource, fmt.Errorf("the clock epoch is not durable: %w", err))
		return
	}
	s.Server.ProbeOK(JournalSource)
}

// read returns the kernel's reading and the time sources'.
func (s *Stepdown) read() timesource.Set {
	raw, err := s.timex.ReadTimex()
	set := s.sources()
	set[probe.KernelSource] = probe.KernelReading(probe.Decode(raw), err)
	return set
}
