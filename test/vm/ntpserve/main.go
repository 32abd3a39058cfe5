package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"strings"
	"time"

	"github.com/clockwatch/clockwatch/test/vm/guest"
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

func run(args []string, stderr io.Writer) int {
	fl := flag.NewFlagSet("ntpserve", flag.ContinueOnError)
	fl.SetOutput(stderr)
	addr := fl.String("addr", "127.0.0.1:11123", "UDP address to serve on")
	offsetFile := fl.String("offset-file", "", "file holding the offset of the served time (a Go duration)")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if err := guest.CheckTestVM(os.DirFS("/")); err != nil {
		fmt.Fprintf(stderr, "ntpserve: refusing to run: %v\n", err)
		return 3
	}
	if err := serve(*addr, *offsetFile); err != nil {
		fmt.Fprintf(stderr, "ntpserve: %v\n", err)
		return 1
	}
	return 0
}

// ntpEpochOffset is the number of seconds from 1900 (NTP) to 1970 (Unix).
const ntpEpochOffset = 2208988800

func serve(addr, offsetFile string) error {
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	defer pc.Close()
	// start carries a monotonic reading: start.Add(time.Since(start)) is
	// the wall clock as read at start, advanced by monotonic time only.
	start := time.Now()
	startWall := start.Round(0)
	now := func() (time.Time, error) {
		off, err := readOffset(offsetFile)
		return startWall.Add(time.Since(start) + off), err
	}
	buf := make([]byte, 512)
	for {
		n, peer, err := pc.ReadFrom(buf)
		if err != nil {
			return fmt.Errorf("reading a request: %w", err)
		}
		recv, err := now()
		if err != nil {
			return err
		}
		if n < 48 || buf[0]&7 != 3 { // not a client request
			continue
		}
		var reply [48]byte
		vn := (buf[0] >> 3) & 7
		reply[0] = vn<<3 | 4                            // no leap warning, server mode
		reply[1] = 1                                    // stratum 1
		reply[2] = buf[2]                               // poll
		reply[3] = 0xec                                 // precision 2^-20
		binary.BigEndian.PutUint32(reply[8:], 1<<16>>6) // root dispersion ~15 ms
		copy(reply[12:16], "TEST")
		putTime(reply[16:], recv)      // reference
		copy(reply[24:32], buf[40:48]) // originate: the client's transmit
		putTime(reply[32:], recv)      // receive
		xmit, _ := now()
		putTime(reply[40:], xmit) // transmit
		if _, err := pc.WriteTo(reply[:], peer); err != nil {
			return fmt.Errorf("replying to %v: %w", peer, err)
		}
	}
}

func readOffset(name string) (time.Duration, error) {
	if name == "" {
		return 0, nil
	}
	b, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading the offset: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("offset file %s: %w", name, err)
	}
	return d, nil
}

// putTime writes t as a 64-bit NTP timestamp.
func putTime(b []byte, t time.Time) {
	sec := uint64(t.Unix() + ntpEpochOffset)
	frac := uint64(t.Nanosecond()) << 32 / 1e9
	binary.BigEndian.PutUint64(b, sec<<32|frac)
}
