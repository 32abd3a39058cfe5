// Command leader runs one node of the ledger service: it campaigns for
// leadership in etcd and, while it leads, books ledger entries into
// PostgreSQL under its fencing token, stepping down when its clockwatch says
// the clock cannot be trusted.
//
//	leader --name A --etcd 127.0.0.1:2379 --dsn postgres://... \
//	       --stepdown-socket /run/clockwatch/stepdown.sock
//
// --no-clockwatch and --no-fencing turn the defences off, --lease-clock=wall
// judges the lease like the incident's lock client did.
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

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/clockwatch/clockwatch/examples/leader"
	"github.com/clockwatch/clockwatch/stepdown"
)

func main() { os.Exit(run()) }

func run() int {
	cfg := leader.DefaultConfig()
	etcd := flag.String("etcd", "127.0.0.1:2379", "etcd endpoints, comma-separated")
	dsn := flag.String("dsn", "", "PostgreSQL connection string of the ledger")
	socket := flag.String("stepdown-socket", stepdown.DefaultSocket, "clockwatch's stepdown socket")
	noClockwatch := flag.Bool("no-clockwatch", false, "ignore clockwatch (the incident's behaviour)")
	noFencing := flag.Bool("no-fencing", false, "write without the fencing token check")
	leaseClock := flag.String("lease-clock", string(cfg.LeaseClock), "clock the node judges its lease with: monotonic or wall")
	flag.StringVar(&cfg.Name, "name", hostname(), "node name")
	flag.StringVar(&cfg.Election, "election", cfg.Election, "etcd key prefix of the election")
	flag.DurationVar(&cfg.TTL, "ttl", cfg.TTL, "lease TTL, whole seconds")
	flag.DurationVar(&cfg.KeepAlive, "keepalive", cfg.KeepAlive, "lease renewal interval (etcd's client also renews every TTL/3)")
	flag.DurationVar(&cfg.WriteInterval, "write-interval", cfg.WriteInterval, "interval between bookings")
	flag.IntVar(&cfg.Entries, "entries", cfg.Entries, "ledger entries per booking")
	flag.Parse()
	cfg.Clockwatch, cfg.Fencing = !*noClockwatch, !*noFencing
	cfg.LeaseClock = leader.LeaseClock(*leaseClock)
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := cfg.Validate(); err != nil {
		log.Error("invalid settings", "err", err)
		return 2
	}
	if *dsn == "" {
		log.Error("--dsn is required")
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: strings.Split(*etcd, ","), DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
	})
	if err != nil {
		log.Error("connecting to etcd", "err", err)
		return 1
	}
	defer cli.Close()
	store, err := leader.NewPGStore(ctx, *dsn)
	if err != nil {
		log.Error("connecting to the ledger", "err", err)
		return 1
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		log.Error("creating the ledger", "err", err)
		return 1
	}
	deps := leader.Deps{Etcd: cli, Store: store, Log: log}
	if cfg.Clockwatch {
		// The whole clockwatch integration: subscribe, and hand the
		// subscription to the node as its guard.
		deps.Guard = stepdown.Subscribe(ctx, stepdown.Options{Path: *socket})
	}
	n, err := leader.NewNode(cfg, deps)
	if err != nil {
		log.Error("starting", "err", err)
		return 2
	}
	if err := n.Run(ctx); err != nil {
		log.Error("stopped", "err", err)
		return 1
	}
	s := n.Stats()
	fmt.Fprintf(os.Stderr, "terms %d, entries attempted %d, landed %d, rejected by the fence %d, failed %d\n",
		len(s.Terms), s.Attempted, s.Landed, s.Rejected, s.Failed)
	return 0
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "node"
	}
	return h
}
