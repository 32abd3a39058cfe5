package exporter

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clockwatch/clockwatch/internal/peers"
	"github.com/clockwatch/clockwatch/stepdown"
)

// Metric names of the fleet's clock (peers:).
const (
	MetricPeerUp             = "clockwatch_peer_up"
	MetricPeerOffset         = "clockwatch_peer_offset_seconds"
	MetricPeerRTT            = "clockwatch_peer_rtt_seconds"
	MetricPeerFleetOffset    = "clockwatch_peer_fleet_offset_seconds"
	MetricPeerDisagreeing    = "clockwatch_peer_disagreeing"
	MetricPeerMeasured       = "clockwatch_peer_measured"
	MetricPeerOutside        = "clockwatch_peer_outside"
	MetricPeerDiscovered     = "clockwatch_peer_discovered"
	MetricPeerDiscoveryUp    = "clockwatch_peer_discovery_up"
	MetricPeerExchanges      = "clockwatch_peer_exchanges_total"
	MetricPeerRequests       = "clockwatch_peer_requests_total"
	MetricPeerRemoteEpoch    = "clockwatch_peer_clock_epoch"
	MetricPeerRemoteStepdown = "clockwatch_peer_stepdown"
)

// PeersSnapshot gives the peers' figures; *peers.Service fits.
type PeersSnapshot = Snapshotter[peers.Snapshot]

var _ PeersSnapshot = (*peers.Service)(nil)

// PeersCollector exports the last round of the fleet's clock: each peer
// measured (up, offset, round trip, what it said of its own clock), the
// majority judge's verdict, and the exchanges and requests counted.
type PeersCollector struct {
	src PeersSnapshot

	up, offset, rtt, epoch, stepdown, fleet, disagreeing, measured, outside, discovered, discoveryUp,
	exchanges, requests *prometheus.Desc
}

var _ prometheus.Collector = (*PeersCollector)(nil)

// NewPeersCollector exports what src measures.
func NewPeersCollector(src PeersSnapshot) *PeersCollector {
	peer := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, []string{"peer"}, nil) }
	return &PeersCollector{
		src:         src,
		up:          peer(MetricPeerUp, "Whether the last round measured the peer: an exchange answered within peers.max_rtt."),
		offset:      peer(MetricPeerOffset, "The peer's clock minus this node's (positive: the peer is ahead), from the exchange with the least round trip of the last round."),
		rtt:         peer(MetricPeerRTT, "Round trip of that exchange."),
		epoch:       peer(MetricPeerRemoteEpoch, "The clock epoch the peer announced in its reply: it changes when the peer's clock steps (and when it reboots)."),
		stepdown:    peer(MetricPeerRemoteStepdown, "1 when the peer said its own state is stepdown, 0 when ok (absent when unknown)."),
		fleet:       desc(MetricPeerFleetOffset, "The median of the fleet's clocks (each peer measured in the last round, and this node's at 0) minus this node's clock."),
		disagreeing: desc(MetricPeerDisagreeing, "Peers of the last round more than peers.max_offset off beyond the sample's uncertainty (rtt/2 and the peer's own error bound)."),
		measured:    desc(MetricPeerMeasured, "Peers measured in the last round; with fewer than 2 the judge decides nothing."),
		outside:     desc(MetricPeerOutside, "1 when the majority judge found this clock outside the fleet in the last round (a strict majority of at least 2 peers disagreeing), else 0."),
		discovered:  desc(MetricPeerDiscovered, "Peers found by peers.static, peers.dns and peers.kubernetes (this node left out)."),
		discoveryUp: desc(MetricPeerDiscoveryUp, "Whether the last refresh of each configured place to find peers worked (static, dns, kubernetes).", "place"),
		exchanges:   desc(MetricPeerExchanges, "Timestamp exchanges with the peers, by result: ok, timeout, spoofed (the reply's origin timestamp is not the request's), unauthenticated, not_agent, rtt_too_large, error.", "result"),
		requests:    desc(MetricPeerRequests, "Requests from peers, by what became of them: answered, not_allowed (peers.allow), rate_limited (peers.rate_limit), malformed, unauthenticated (peers.key_file).", "result"),
	}
}

// Describe implements prometheus.Collector.
func (c *PeersCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.offset, c.rtt, c.epoch, c.stepdown, c.fleet, c.disagreeing, c.measured,
		c.outside, c.discovered, c.discoveryUp, c.exchanges, c.requests} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *PeersCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Snapshot()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, r := range s.Results {
		name := r.Peer.Name
		gauge(c.up, boolFloat(r.OK), name)
		if !r.OK {
			continue
		}
		gauge(c.offset, r.Best.Offset.Seconds(), name)
		gauge(c.rtt, r.Best.RTT.Seconds(), name)
		if r.Best.HasState {
			gauge(c.epoch, float64(r.Best.State.Epoch), name)
			switch r.Best.State.State {
			case stepdown.StateOK:
				gauge(c.stepdown, 0, name)
			case stepdown.StateStepdown:
				gauge(c.stepdown, 1, name)
			}
		}
	}
	if s.Rounded {
		gauge(c.measured, float64(s.Verdict.Measured))
		gauge(c.disagreeing, float64(len(s.Verdict.Disagreeing)))
		gauge(c.outside, boolFloat(s.Verdict.Outside))
		if s.Verdict.Measured > 0 {
			gauge(c.fleet, s.Verdict.FleetOffset.Seconds())
		}
	}
	gauge(c.discovered, float64(s.Peers))
	for _, place := range []string{"static", "dns", "kubernetes"} {
		if ok, on := s.Places[place]; on {
			gauge(c.discoveryUp, boolFloat(ok), place)
		}
	}
	for _, r := range peers.ExchangeResults() {
		ch <- prometheus.MustNewConstMetric(c.exchanges, prometheus.CounterValue, float64(s.Exchanges[r]), r)
	}
	for i, r := range peers.RequestResults() {
		ch <- prometheus.MustNewConstMetric(c.requests, prometheus.CounterValue, float64(s.Requests[i]), r)
	}
}
