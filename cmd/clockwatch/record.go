//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"golang.org/x/sync/errgroup"

	"github.com/clockwatch/clockwatch/internal/hostclock"
	"github.com/clockwatch/clockwatch/internal/trace"
)

func addRecordCommand(app *kingpin.Application, c *cli) subcommand {
	cmd := app.Command("record", "Record the live clock samples and clock-set marks as a trace (JSON lines) for replay or a bug report.")
	duration := cmd.Flag("duration", "Stop after this long; 0 records until interrupted.").Default("0s").Duration()
	out := cmd.Flag("out", "Write the trace to this file instead of standard output.").PlaceHolder("FILE").String()
	interval := cmd.Flag("interval", "Sampling interval; by default the configured clock.sample_interval.").Duration()
	return subcommand{clause: cmd, run: func(ctx context.Context) int {
		full, err := c.config()
		if err != nil {
			fmt.Fprintf(c.stderr, "clockwatch: %v\n", err)
			return 2
		}
		cfg := full.Step
		if *interval == 0 {
			*interval = cfg.Interval
		}
		var w io.Writer = c.stdout
		if *out != "" {
			f, err := os.Create(*out)
			if err != nil {
				fmt.Fprintf(c.stderr, "clockwatch: record: %v\n", err)
				return 1
			}
			defer f.Close()
			w = f
		}
		n, err := recordTrace(ctx, *duration, *interval, w)
		if err != nil {
			fmt.Fprintf(c.stderr, "clockwatch: record: %v\n", err)
			return 1
		}
		if *out != "" { // on standard output the summary would mix with the trace's readers
			fmt.Fprintf(c.stderr, "clockwatch record: %s and %s written to %s\n", count(n.Samples, "sample"), count(n.Marks, "clock-set mark"), *out)
		}
		return 0
	}}
}

func recordTrace(ctx context.Context, duration, interval time.Duration, w io.Writer) (trace.Counts, error) {
	if duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, duration)
		defer cancel()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watcher := hostclock.NewClockSetWatcher()
	g, ctx := errgroup.WithContext(ctx)
	var n trace.Counts
	g.Go(func() error { return watcher.Run(ctx) })
	g.Go(func() error {
		defer cancel() // stop the watcher when recording stops
		select {
		case <-watcher.Ready():
		case <-ctx.Done():
			return nil
		}
		var err error
		n, err = trace.Record(ctx, hostclock.SysClocks{}, watcher.Marks(), interval, w)
		return err
	})
	err := g.Wait()
	return n, err
}

// count says "1 sample" or "3 samples".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
