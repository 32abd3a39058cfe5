package peers

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/stepdown"
)

// cpu is this process's user and system CPU time so far.
func cpu(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkExchange: one timestamp exchange on loopback, querier and
// responder in this process: CPU (both sides) and bytes each way.
func BenchmarkExchange(b *testing.B) {
	for _, signed := range []bool{false, true} {
		b.Run(fmt.Sprintf("signed=%v", signed), func(b *testing.B) {
			var ks Keys
			var k *Key
			if signed {
				ks, _ = parseKeys(strings.NewReader("1 AES128 HEX:000102030405060708090a0b0c0d0e0f\n"), "keys")
				key := ks[1]
				k = &key
			}
			conn, err := ListenUDP("127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			r := NewResponder(conn, ResponderOptions{Rate: 1e9, Burst: 1e9, Keys: ks, Allowed: func(netip.Addr) bool { return true },
				Local: func() State { return State{State: stepdown.StateOK, Epoch: 1} }})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go r.Run(ctx)
			addr := conn.LocalAddr().String()
			b.ResetTimer()
			c0 := cpu(b)
			for b.Loop() {
				if _, err := (NTPExchanger{}).Exchange(addr, time.Second, k); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpu(b)-c0)/float64(b.N)/1e3, "cpu-µs/exchange")
			req := headerLen + stateFieldLen
			if signed {
				req += 4 + 16
			}
			// UDP payload each way, and on the wire over IPv4 (UDP 8 and
			// IP 20 bytes of headers).
			b.ReportMetric(float64(req), "payload-B/way")
			b.ReportMetric(float64(2*(req+28)), "IPv4-B/exchange")
		})
	}
}

// BenchmarkRound: a round of the default settings, 16 peers × 4
// exchanges 10 ms apart, peers 8 at a time.
func BenchmarkRound(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var peers []Peer
	for i := range 16 {
		conn, err := ListenUDP("127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		r := NewResponder(conn, ResponderOptions{Rate: 1e9, Burst: 1e9, Allowed: func(netip.Addr) bool { return true }})
		go r.Run(ctx)
		peers = append(peers, Peer{Name: fmt.Sprint("p", i), Addr: conn.LocalAddr().String()})
	}
	o := QuerierOptions{Exchanges: 4, Spacing: spacing, Timeout: time.Second, MaxRTT: 50 * time.Millisecond}
	b.ResetTimer()
	c0 := cpu(b)
	start := time.Now()
	for b.Loop() {
		for _, r := range Round(ctx, NTPExchanger{}, peers, o) {
			if !r.OK {
				b.Fatal(r.Err)
			}
		}
	}
	b.ReportMetric(float64(cpu(b)-c0)/float64(b.N)/1e6, "cpu-ms/round")
	b.ReportMetric(float64(time.Since(start))/float64(b.N)/1e6, "wall-ms/round")
}
