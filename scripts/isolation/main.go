// Command isolation measures a real clockwatch's isolation (issue 32, item
// 1): a good root subscriber's delivery of drills with no flood, then under
// each flood another local user can make (connect/close loops from uid
// 65534, 2,000 never-reading subscribers of two other uids, a 64-connection
// /metrics flood, a TLS-handshake flood), then all at once, then with no
// flood again, in one run, and prints the table (docs/performance.md,
// "Isolation"). It runs as root (the floods run as other uids) and stops
// every process it started by PID.
//
//	make bench-isolation   # or: go run ./scripts/isolation -bin bin/clockwatch
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/clockwatch/clockwatch/internal/floodtest"
)

func main() {
	floodtest.Child()
	bin := flag.String("bin", "bin/clockwatch", "clockwatch binary")
	drills := flag.Int("drills", 200, "drills per phase")
	procs := flag.Int("gomaxprocs", 0, "the daemon's --runtime.gomaxprocs (0: its default)")
	only := flag.String("only", "", "run only the floods whose name contains this (and the baselines)")
	flag.Parse()
	if os.Geteuid() != 0 {
		log.Fatal("run as root: the floods run as other uids")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	before, _ := os.ReadFile("/proc/loadavg")
	began := time.Now()
	var phases []floodtest.Phase
	for _, ph := range floodtest.DefaultPhases() {
		if len(ph.Floods) == 0 || strings.Contains(ph.Name, *only) {
			phases = append(phases, ph)
		}
	}
	rs, err := floodtest.Run(ctx, floodtest.Options{Bin: *bin, GOMAXPROCS: *procs, Drills: *drills,
		Phases: phases, Progress: os.Stderr})
	if err != nil {
		log.Fatal(err)
	}
	after, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("%s, %d drills a phase, the daemon's GOMAXPROCS %s; load average %s before, %s after (%s)\n\n",
		began.UTC().Format("2006-01-02 15:04 UTC"), *drills, procsName(*procs),
		strings.Join(strings.Fields(string(before))[:3], " "), strings.Join(strings.Fields(string(after))[:3], " "),
		time.Since(began).Round(time.Second))
	floodtest.Table(os.Stdout, rs)
}

func procsName(n int) string {
	if n == 0 {
		return "the binary's default"
	}
	return fmt.Sprint(n)
}
