package peers

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/clockwatch/clockwatch/internal/loop"
)

// Peer is one agent this node measures.
type Peer struct {
	// Name is how metrics, logs and watch_peer name it: the address as
	// peers.static writes it, "IP:port" for DNS, the Node's name for
	// Kubernetes.
	Name string
	// Addr is where it answers, "host:port".
	Addr string
}

// Result is one round's measurement of one peer.
type Result struct {
	Peer Peer
	// OK says that Best is a usable sample: at least one exchange
	// answered within MaxRTT; Err says why not.
	OK   bool
	Best Sample
	Err  error
	// Exchanges counts this round's exchanges by result
	// (ExchangeResults).
	Exchanges map[string]int
}

// QuerierOptions are a round's settings.
type QuerierOptions struct {
	// Exchanges is how many exchanges a round makes with each peer,
	// Spacing apart; Timeout bounds each.
	Exchanges int
	Spacing   time.Duration
	Timeout   time.Duration
	// MaxRTT drops samples whose round trip is longer: their offset is
	// too uncertain to decide anything.
	MaxRTT time.Duration
	// Parallel bounds the peers measured at once (8 if zero).
	Parallel int
	// Key signs the requests and checks the replies, when not nil.
	Key *Key
}

// Round measures every peer once: Exchanges exchanges each, keeping the
// sample with the least round trip (Best). The results are in peers' order.
func Round(ctx context.Context, ex Exchanger, peers []Peer, o QuerierOptions) []Result {
	if o.Parallel <= 0 {
		o.Parallel = 8
	}
	out := make([]Result, len(peers))
	sem := make(chan struct{}, o.Parallel)
	var wg sync.WaitGroup
	for i, p := range peers {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			out[i] = Result{Peer: p, Err: ctx.Err(), Exchanges: map[string]int{}}
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			out[i] = measure(ctx, ex, p, o)
		})
	}
	wg.Wait()
	return out
}

// measure makes one peer's exchanges.
func measure(ctx context.Context, ex Exchanger, p Peer, o QuerierOptions) Result {
	r := Result{Peer: p, Exchanges: map[string]int{}}
	var samples []Sample
	var lastErr error
	for i := range o.Exchanges {
		if i > 0 && !loop.Sleep(ctx, o.Spacing) {
			break
		}
		s, err := ex.Exchange(p.Addr, o.Timeout, o.Key)
		if err != nil {
			r.Exchanges[resultOf(err)]++
			lastErr = err
			continue
		}
		if s.RTT > o.MaxRTT {
			r.Exchanges[ExchangeRTTTooLarge]++
			lastErr = fmt.Errorf("%s: round trip %v is over peers.max_rtt (%v)", p.Addr, s.RTT, o.MaxRTT)
			continue
		}
		r.Exchanges[ExchangeOK]++
		samples = append(samples, s)
	}
	r.Best, r.OK = Best(samples, o.MaxRTT)
	if !r.OK {
		r.Err = lastErr
		if r.Err == nil {
			r.Err = ctx.Err()
		}
	}
	return r
}
