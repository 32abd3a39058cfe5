package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/beevik/ntp"
	"golang.org/x/sys/unix"

	"github.com/clockwatch/clockwatch/internal/peers"
	"github.com/clockwatch/clockwatch/test/vm/guest"
)

func main() {
	sync := flag.Bool("sync", false, "set the clock from the NTP server at the address")
	flag.Parse()
	if err := guest.CheckTestVM(os.DirFS("/")); err != nil {
		fmt.Fprintf(os.Stderr, "peerprobe: refusing to run: %v\n", err)
		os.Exit(3)
	}
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: peerprobe [-sync] HOST:PORT")
		os.Exit(2)
	}
	addr := flag.Arg(0)
	if *sync {
		if err := syncFrom(addr); err != nil {
			fmt.Fprintf(os.Stderr, "peerprobe: %v\n", err)
			os.Exit(1)
		}
		return
	}
	s, err := peers.NTPExchanger{}.Exchange(addr, time.Second, nil)
	if err != nil {
		fmt.Printf("peerprobe: %s: no answer: %v\n", addr, err)
		os.Exit(1)
	}
	fmt.Printf("peerprobe: %s: answered, offset %v, rtt %v\n", addr, s.Offset, s.RTT)
}

// syncFrom steps the clock by the offset of the least-rtt of eight samples.
func syncFrom(addr string) error {
	var best *ntp.Response
	for range 8 {
		r, err := ntp.QueryWithOptions(addr, ntp.QueryOptions{Timeout: time.Second})
		if err != nil {
			continue
		}
		if best == nil || r.RTT < best.RTT {
			best = r
		}
	}
	if best == nil {
		return fmt.Errorf("no answer from %s", addr)
	}
	d := best.ClockOffset
	sec, nsec := int64(d)/1e9, int64(d)%1e9
	if nsec < 0 {
		sec, nsec = sec-1, nsec+1e9
	}
	tx := unix.Timex{Modes: unix.ADJ_SETOFFSET | unix.ADJ_NANO, Time: unix.Timeval{Sec: sec, Usec: nsec}}
	if _, err := unix.ClockAdjtime(unix.CLOCK_REALTIME, &tx); err != nil {
		return fmt.Errorf("clock_adjtime ADJ_SETOFFSET %v: %w", d, err)
	}
	fmt.Printf("peerprobe: clock set from %s by %v (rtt %v)\n", addr, d, best.RTT)
	return nil
}
