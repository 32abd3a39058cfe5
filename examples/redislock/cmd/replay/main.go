// Command replay replays the Redis lock incident (docs/incident-replay.md):
// a real Redis master, two replicas and three Sentinels on loopback, a real
// PostgreSQL, six workers racing for SET comp:lock:recon:<date> <uuid> NX PX
// 30000, the master killed (or isolated) 180 ms after the lock was taken,
// and the orders paid twice counted for each defence. Run
// scripts/test-deps.sh first (redis-server, redis-sentinel, postgresql).
//
//	GOWORK=off go run ./cmd/replay          # from examples/redislock
//	GOWORK=off go run ./cmd/replay -locks   # and every lock granted
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/clockwatch/clockwatch/examples/redislock/replay"
)

func main() { os.Exit(run()) }

func run() int {
	p := replay.ArticleParams()
	flag.DurationVar(&p.DownAfter, "down-after", p.DownAfter, "Sentinel's down-after-milliseconds")
	flag.IntVar(&p.Orders, "orders", p.Orders, "unreconciled orders")
	flag.DurationVar(&p.PayEvery, "pay-every", p.PayEvery, "time between two payments of a job")
	flag.DurationVar(&p.FaultAfter, "fault-after", p.FaultAfter, "time from the lock to the fault")
	only := flag.String("run", "", "run only the scenarios whose name contains this")
	locks := flag.Bool("locks", false, "after the table, print every lock granted and what came of it")
	events := flag.Bool("events", false, "after the table, print the Sentinels' events")
	verbose := flag.Bool("v", false, "log what the workers do to stderr")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	replay.QuietRedisClient()
	tools, err := replay.FindTools()
	if err != nil {
		fmt.Fprintf(os.Stderr, "replay: %v; run scripts/test-deps.sh\n", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "redislock-replay-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "replay: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	pg, err := replay.StartPostgres(ctx, tools, dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "replay: %v\n", err)
		return 1
	}
	defer pg.Stop()
	env := replay.Env{Tools: tools, DSN: pg.DSN, Dir: dir}
	if *verbose {
		env.Log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	var scenarios []replay.Scenario
	for _, s := range replay.Scenarios() {
		if strings.Contains(s.Name, *only) {
			scenarios = append(scenarios, s)
		}
	}
	fmt.Fprintf(os.Stderr, "%d workers, %d orders paid every %s, lock PX %s, fault %s after the lock, down-after-milliseconds %d\n",
		p.Workers, p.Orders, p.PayEvery, p.TTL, p.FaultAfter, p.DownAfter.Milliseconds())
	began := time.Now()
	results, err := replay.RunAll(ctx, env, p, scenarios, os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "replay: %v\n", err)
		return 1
	}
	if err := replay.Format(os.Stdout, results); err != nil {
		fmt.Fprintf(os.Stderr, "replay: %v\n", err)
		return 1
	}
	if *locks {
		fmt.Println()
		if err := replay.FormatLocks(os.Stdout, results); err != nil {
			fmt.Fprintf(os.Stderr, "replay: %v\n", err)
			return 1
		}
	}
	if *events {
		for _, r := range results {
			fmt.Printf("\n%s:\n  %s\n", r.Scenario.Name, strings.Join(r.Events, "\n  "))
		}
	}
	fmt.Fprintf(os.Stderr, "took %s\n", time.Since(began).Round(time.Second))
	return 0
}
