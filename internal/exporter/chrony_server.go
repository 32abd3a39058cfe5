package exporter

import (
	"time"

	"github.com/clockwatch/clockwatch/internal/probe/chrony"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Metric names of chronyd's server side (chronyc serverstats, clients), the
// figures chrony_exporter's serverstats collector has, in base units.
const (
	MetricChronyServerStatsUp        = "clockwatch_chrony_server_stats_up"
	MetricChronyServerNTPRequests    = "clockwatch_chrony_server_ntp_requests_total"
	MetricChronyServerNTPDropped     = "clockwatch_chrony_server_ntp_requests_dropped_total"
	MetricChronyServerNTPAuth        = "clockwatch_chrony_server_ntp_authenticated_requests_total"
	MetricChronyServerNTPInterleaved = "clockwatch_chrony_server_ntp_interleaved_requests_total"
	MetricChronyServerNKEConnections = "clockwatch_chrony_server_nts_ke_connections_total"
	MetricChronyServerNKEDropped     = "clockwatch_chrony_server_nts_ke_connections_dropped_total"
	MetricChronyServerCmdRequests    = "clockwatch_chrony_server_command_requests_total"
	MetricChronyServerCmdDropped     = "clockwatch_chrony_server_command_requests_dropped_total"
	MetricChronyServerLogDropped     = "clockwatch_chrony_server_client_log_dropped_total"
	MetricChronyServerTimestamps     = "clockwatch_chrony_server_interleaved_timestamps"
	MetricChronyServerTimestampSpan  = "clockwatch_chrony_server_interleaved_timestamps_span_seconds"
	MetricChronyServerRxTimestamps   = "clockwatch_chrony_server_rx_timestamps_total"
	MetricChronyServerTxTimestamps   = "clockwatch_chrony_server_tx_timestamps_total"
	MetricChronyServerClients        = "clockwatch_chrony_server_clients"
	MetricChronyServerStatsAge       = "clockwatch_chrony_server_stats_age_seconds"
)

// ChronyServerSnapshotter gives the server-side poller's last result;
// *chrony.ServerPoller fits.
type ChronyServerSnapshotter = Snapshotter[chrony.ServerSnapshot]

var _ ChronyServerSnapshotter = (*chrony.ServerPoller)(nil)

// ChronyServerCollector exports chronyd's server side while it is exported
// (chrony.server_stats on, or auto once chronyd has served someone). A pure
// client exports none of it.
type ChronyServerCollector struct {
	src ChronyServerSnapshotter
	now func() time.Time

	up, ntp, ntpDrop, ntpAuth, ntpIl, nke, nkeDrop, cmd, cmdDrop, logDrop, ts, tsSpan, rx, tx, clients, age *prometheus.Desc
	// tsLabels are the label pairs of the three timestamp sources.
	tsLabels [3][]*dto.LabelPair
}

var _ prometheus.Collector = (*ChronyServerCollector)(nil)

// chronyServerMetrics is the most metrics one collect sends.
const chronyServerMetrics = 20

// NewChronyServerCollector exports what src keeps.
func NewChronyServerCollector(src ChronyServerSnapshotter) *ChronyServerCollector {
	c := &ChronyServerCollector{
		src:     src,
		now:     time.Now,
		up:      desc(MetricChronyServerStatsUp, "Whether chronyd's server statistics could be read (its unix socket only)."),
		ntp:     desc(MetricChronyServerNTPRequests, "NTP requests chronyd received as a server."),
		ntpDrop: desc(MetricChronyServerNTPDropped, "NTP requests chronyd dropped (rate limiting)."),
		ntpAuth: desc(MetricChronyServerNTPAuth, "Authenticated NTP requests (symmetric key or NTS)."),
		ntpIl:   desc(MetricChronyServerNTPInterleaved, "NTP requests in interleaved mode."),
		nke:     desc(MetricChronyServerNKEConnections, "NTS-KE connections chronyd accepted."),
		nkeDrop: desc(MetricChronyServerNKEDropped, "NTS-KE connections chronyd dropped (rate limiting)."),
		cmd:     desc(MetricChronyServerCmdRequests, "Command (chronyc) requests chronyd received."),
		cmdDrop: desc(MetricChronyServerCmdDropped, "Command requests chronyd dropped."),
		logDrop: desc(MetricChronyServerLogDropped, "Clients chronyd could not log for lack of memory (raise clientloglimit)."),
		ts:      desc(MetricChronyServerTimestamps, "Server timestamps chronyd holds for interleaved mode."),
		tsSpan:  desc(MetricChronyServerTimestampSpan, "Time span of those timestamps."),
		rx:      desc(MetricChronyServerRxTimestamps, "Receive timestamps of served requests by where they were taken (chrony 4.4 and later).", "source"),
		tx:      desc(MetricChronyServerTxTimestamps, "Transmit timestamps of served responses by where they were taken (chrony 4.4 and later).", "source"),
		clients: desc(MetricChronyServerClients, "Clients in chronyd's client log that sent NTP requests or NTS-KE connections."),
		age:     desc(MetricChronyServerStatsAge, "Time since the server statistics were last read."),
	}
	for i, s := range []string{"daemon", "kernel", "hardware"} {
		c.tsLabels[i] = labelPairs([]string{"source"}, s)
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *ChronyServerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.ntp, c.ntpDrop, c.ntpAuth, c.ntpIl, c.nke, c.nkeDrop, c.cmd,
		c.cmdDrop, c.logDrop, c.ts, c.tsSpan, c.rx, c.tx, c.clients, c.age} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *ChronyServerCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Snapshot()
	if !s.Serving {
		return
	}
	b := newMetricBatch(chronyServerMetrics)
	gauge := func(d *prometheus.Desc, v float64) { ch <- b.next(d, prometheus.GaugeValue, v, nil) }
	counter := func(d *prometheus.Desc, v uint64, ls []*dto.LabelPair) {
		ch <- b.next(d, prometheus.CounterValue, float64(v), ls)
	}
	gauge(c.up, boolFloat(s.Up))
	if !s.HaveData {
		return
	}
	gauge(c.age, c.now().Sub(s.LastSuccess).Seconds())
	st := s.Data.Stats
	counter(c.ntp, st.NTPHits, nil)
	counter(c.ntpDrop, st.NTPDrops, nil)
	counter(c.cmd, st.CmdHits, nil)
	counter(c.cmdDrop, st.CmdDrops, nil)
	counter(c.logDrop, st.LogDrops, nil)
	gauge(c.clients, float64(s.Data.Clients))
	if st.Version >= 2 {
		counter(c.nke, st.NKEHits, nil)
		counter(c.nkeDrop, st.NKEDrops, nil)
		counter(c.ntpAuth, st.NTPAuthHits, nil)
	}
	if st.Version >= 3 {
		counter(c.ntpIl, st.NTPInterleavedHits, nil)
		gauge(c.ts, float64(st.NTPTimestamps))
		gauge(c.tsSpan, st.NTPSpan.Seconds())
	}
	if st.Version >= 4 {
		for i, v := range [3][2]uint64{{st.DaemonRx, st.DaemonTx}, {st.KernelRx, st.KernelTx}, {st.HWRx, st.HWTx}} {
			counter(c.rx, v[0], c.tsLabels[i])
			counter(c.tx, v[1], c.tsLabels[i])
		}
	}
}
