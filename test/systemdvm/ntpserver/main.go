// Command ntpserver is the NTP server systemd-timesyncd synchronises to in
// the systemd VM test: internal/ntptest's server (stratum 1, "TEST") on an
// address until SIGTERM, serving the wall clock as it was at the start plus
// the monotonic time since, plus an offset. So the served time does not
// follow the clock timesyncd corrects (a server that did would have it chase
// the offset for ever, its frequency running to the kernel's 500 ppm limit).
// It never touches a clock; the timesyncd it serves sets the guest's.
//
//	ntpserver -addr 127.0.0.1:123 -offset 100ms
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/clockwatch/clockwatch/internal/ntptest"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:123", "UDP address to serve on")
	offset := flag.Duration("offset", 0, "how far ahead of this machine's clock the served time runs")
	flag.Parse()
	s, err := ntptest.Start(*addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ntpserver:", err)
		os.Exit(1)
	}
	// start carries a monotonic reading: start.Round(0) is the wall clock
	// then, and time.Since(start) is monotonic.
	start := time.Now()
	//clockwatch:wallclock-ok the served offset is wall minus wall on purpose: the server follows this machine's wall clock
	follow := func() { s.SetOffset(start.Round(0).Add(time.Since(start) + *offset).Sub(time.Now().Round(0))) }
	follow()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for running := true; running; {
		select {
		case <-sig:
			running = false
		case <-t.C:
			follow()
		}
	}
	fmt.Fprintf(os.Stderr, "ntpserver: served %d requests\n", s.Served())
	s.Close()
}
