// Command ntpserver is the NTP server systemd-timesyncd synchronises to in
// the systemd VM test: internal/ntptest's server (stratum 1, "TEST") on an
// address, serving the guest's clock plus an offset, until SIGTERM. It never
// touches a clock; the timesyncd it serves sets the guest's.
//
//	ntpserver -addr 127.0.0.1:123 -offset 100ms
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

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
	s.SetOffset(*offset)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	fmt.Fprintf(os.Stderr, "ntpserver: served %d requests\n", s.Served())
	s.Close()
}
