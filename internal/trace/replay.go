package trace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/clockwatch/clockwatch/internal/hostclock"
	"github.com/clockwatch/clockwatch/internal/kernel"
	"github.com/clockwatch/clockwatch/internal/step"
)

// Counts is what a recording or a replay went through, for its summary line.
type Counts struct {
	// Samples and Marks are the trace's samples and clock-set marks.
	Samples, Marks int
	// Events is how many events the detector found (Replay only).
	Events int
}

// Record writes a trace of the live clocks to w: a sample at once and every
// interval, and for every mark the mark and a fresh sample right after it,
// as the daemon's Sampler does. marks may be nil. It returns nil when ctx is
// done, or the first read or write error.
func Record(ctx context.Context, clocks hostclock.ClockReader, marks <-chan hostclock.Mark, interval time.Duration, w io.Writer) (Counts, error) {
	var n Counts
	if interval <= 0 {
		return n, fmt.Errorf("recording a trace: interval must be positive, got %v", interval)
	}
	tw := NewWriter(w)
	var s kernel.Sample
	sample := func() error {
		if err := clocks.ReadClocks(&s); err != nil {
			return fmt.Errorf("recording a trace: %w", err)
		}
		if err := tw.Sample(s); err != nil {
			return fmt.Errorf("writing the trace: %w", err)
		}
		n.Samples++
		return nil
	}
	if err := sample(); err != nil {
		return n, err
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return n, nil
		case m := <-marks:
			if err := tw.ClockSet(m.Mono); err != nil {
				return n, fmt.Errorf("writing the trace: %w", err)
			}
			n.Marks++
		case <-t.C:
		}
		if err := sample(); err != nil {
			return n, err
		}
	}
}

// Replay feeds the trace read from r through a Detector with cfg, starting
// from the zero State, and writes one JSON line per event to w. It stops at
// the first bad line with an error naming it; the events before it are
// written.
func Replay(r io.Reader, cfg step.Config, w io.Writer) (Counts, error) {
	var n Counts
	if err := cfg.Validate(); err != nil {
		return n, err
	}
	d := step.NewDetector(cfg, step.State{})
	tr := NewReader(r)
	buf := make([]byte, 0, 512)
	for {
		l, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if l.ClockSet {
			n.Marks++
			d.ClockSet(l.Sample.Mono)
			continue
		}
		n.Samples++
		for _, e := range d.Observe(l.Sample) {
			n.Events++
			buf = append(e.AppendJSON(buf[:0]), '\n')
			if _, err := w.Write(buf); err != nil {
				return n, fmt.Errorf("writing replayed events: %w", err)
			}
		}
	}
}
