// Command replay replays the incident with the real timings (a 15 s lease
// renewed every 5 s, a 12.4 s step back) and prints the table of
// docs/incident-replay.md. It starts its own etcd and PostgreSQL on loopback
// (run scripts/test-deps.sh first) and one clockwatch per node, built from
// this repository, and takes about three minutes.
//
//	go run ./cmd/replay            # from examples/leader
//	go run ./cmd/replay -ttl 3s    # the scaled run of the test
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/clockwatch/clockwatch/examples/leader/replay"
)

func main() { os.Exit(run()) }

func run() int {
	ttl := flag.Duration("ttl", 15*time.Second, "lease TTL (etcd's client renews every TTL/3)")
	step := flag.Duration("step", 0, "step of node A's wall clock (default: -12.4s scaled to the TTL)")
	verbose := flag.Bool("v", false, "log what the nodes do to stderr")
	terms := flag.Bool("terms", false, "after the table, print when each node believed it led and what it wrote")
	clockwatch := flag.String("clockwatch", "", "clockwatch binary (default: build ./cmd/clockwatch of this repository)")
	fake := flag.Bool("fake-clockwatch", false, "stand in for clockwatch with a guard driven by the experiment")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	p := replay.Scaled(*ttl)
	if *step != 0 {
		p.Step = *step
	}
	tools, err := replay.FindTools()
	if err != nil {
		fmt.Fprintf(os.Stderr, "replay: %v; run scripts/test-deps.sh\n", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "incident-replay-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "replay: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	etcd, err := replay.StartEtcd(ctx, tools.Etcd, dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "replay: %v\n", err)
		return 1
	}
	defer etcd.Stop()
	pg, err := replay.StartPostgres(ctx, tools, dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "replay: %v\n", err)
		return 1
	}
	defer pg.Stop()

	env := replay.Env{Etcd: etcd.Endpoint, DSN: pg.DSN, Clockwatch: replay.ManualClockwatches}
	if *verbose {
		env.Log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if !*fake {
		bin := *clockwatch
		if bin == "" {
			if bin, err = replay.BuildClockwatch(ctx, dir); err != nil {
				fmt.Fprintf(os.Stderr, "replay: %v\n", err)
				return 1
			}
		}
		daemons := map[string]*replay.Daemon{}
		for _, node := range []string{"A", "D"} {
			d, err := replay.StartDaemon(ctx, bin, dir, node, env.Log)
			if err != nil {
				fmt.Fprintf(os.Stderr, "replay: %v\n", err)
				return 1
			}
			defer d.Stop()
			daemons[node] = d
		}
		env.Clockwatch = func(ctx context.Context, node string) (replay.Clockwatch, error) {
			return daemons[node].Subscribe(ctx), nil
		}
	}
	fmt.Fprintf(os.Stderr, "lease TTL %s (keepalive every %s), step %s\n", p.TTL, p.TTL/3, p.Step)
	results, err := replay.RunAll(ctx, env, p, os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "replay: %v\n", err)
		return 1
	}
	if err := replay.Format(os.Stdout, results); err != nil {
		fmt.Fprintf(os.Stderr, "replay: %v\n", err)
		return 1
	}
	if *terms {
		fmt.Println()
		if err := replay.FormatTerms(os.Stdout, results); err != nil {
			fmt.Fprintf(os.Stderr, "replay: %v\n", err)
			return 1
		}
	}
	return 0
}
