package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/clockwatch/clockwatch/probe"
	"github.com/clockwatch/clockwatch/step"
	"github.com/clockwatch/clockwatch/stepdown/policy"
	"github.com/clockwatch/clockwatch/stepdown/server"
)

// stepEventBuffer is how many step events the stepdown feed may fall behind.
const stepEventBuffer = 1024

// Stepdown is the stepdown server with its inputs wired: step events from
// the bus, the kernel's synchronisation state, and the time daemon reading.
type Stepdown struct {
	Server *server.Server
	sub    interface {
		C() <-chan step.Event
		Close()
	}
	timex  probe.TimexReader
	chrony func() server.ChronyReading
	steps  *Steps
	poll   time.Duration
	log    *slog.Logger
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
// cannot be opened fails the start with a message that says why.
// chrony may be nil when no time daemon is polled.
func NewStepdown(cfg server.Config, steps *Steps, timex probe.TimexReader, chrony func() server.ChronyReading,
	poll time.Duration, logger *slog.Logger) (*Stepdown, error) {
	cfg = cfg.Resolve(os.Getenv)
	srv, err := server.New(cfg, server.Options{Logger: logger, Epoch: steps.Journal.State().Epoch})
	if err != nil {
		return nil, fmt.Errorf("stepdown socket: %w", err)
	}
	if err := srv.Listen(); err != nil {
		return nil, fmt.Errorf("%w; set stepdown.socket to a writable path (or RUNTIME_DIRECTORY), or stepdown.enabled: false", err)
	}
	if chrony == nil {
		chrony = func() server.ChronyReading { return server.ChronyReading{} }
	}
	wd := &WriteDelay{desc: prometheus.NewDesc(MetricStepdownWriteDelay,
		"Latency from the kernel's clock-set notification (the watcher's CLOCK_MONOTONIC read) to the stepdown message of the step it revealed having been written to the subscribers' sockets (those whose buffer had room; the others get it from their queue), counted only when a subscriber was connected.",
		nil, nil)}
	return &Stepdown{Server: srv, sub: steps.Durable.Subscribe(stepEventBuffer), timex: timex, chrony: chrony,
		steps: steps, poll: poll, log: logger, WriteDelay: wd}, nil
}

// Tasks are the server itself, the step event feed, and the poll of the
// kernel and time daemon state.
func (s *Stepdown) Tasks() []func(context.Context) error {
	return []func(context.Context) error{
		s.Server.Run,
		func(ctx context.Context) error {
			defer s.sub.Close()
			return server.Feed(ctx, s.sub.C(), s.apply)
		},
		func(ctx context.Context) error {
			select {
			case <-s.steps.Ready():
			case <-ctx.Done():
				return nil
			}
			s.Server.ProbeOK("clocks")
			return s.Server.PollChrony(ctx, s.poll, s.read)
		},
	}
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
		s.Server.ProbeFailed("journal", fmt.Errorf("the clock epoch is not durable: %w", err))
		return
	}
	s.Server.ProbeOK("journal")
}

// read feeds the kernel's state and returns the time daemon's, once a poll.
func (s *Stepdown) read() server.ChronyReading {
	raw, err := s.timex.ReadTimex()
	tx := probe.Decode(raw)
	s.Server.Kernel(tx.Synchronized(), tx.MaxError, err)
	s.journalProbe()
	return s.chrony()
}
