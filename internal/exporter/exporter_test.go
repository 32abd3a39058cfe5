package exporter

import (
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/clockwatch/clockwatch/internal/hostclock"
	"github.com/clockwatch/clockwatch/internal/hostclock/hostclocktest"
	"github.com/clockwatch/clockwatch/internal/kernel"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

const sec = int64(time.Second)

func TestClockUpdater(t *testing.T) {
	t.Parallel()
	clocks := &hostclocktest.Clocks{Samples: []kernel.Sample{
		{Mono: 100 * sec, Boot: 100 * sec, Real: 1_800_000_000 * sec, Raw: 100 * sec, TAI: 1_800_000_037 * sec, Window: 1000},
		// 10 s later: MONOTONIC ran 20 ppm faster than RAW, 2 s suspended.
		{Mono: 110*sec + 200_000, Boot: 112*sec + 700_000, Real: 1_800_000_012*sec + 700_000, Raw: 110 * sec,
			TAI: 1_800_000_049*sec + 700_000, Window: 2000},
	}}
	c := NewScraper(quiet, NewClockUpdater(clocks))
	want := `
# HELP clockwatch_clock_frequency_correction_ratio Rate of CLOCK_MONOTONIC against CLOCK_MONOTONIC_RAW since the previous scrape, minus one: the frequency correction applied to the hardware clock.
# TYPE clockwatch_clock_frequency_correction_ratio gauge
clockwatch_clock_frequency_correction_ratio 1.999999999990898e-05
# HELP clockwatch_clock_realtime_seconds CLOCK_REALTIME when sampled; compare with the scrape's timestamp() to see this clock's offset from Prometheus's.
# TYPE clockwatch_clock_realtime_seconds gauge
clockwatch_clock_realtime_seconds 1.8000000120007e+09
# HELP clockwatch_clock_sample_uncertainty_seconds How long reading all the clocks took: the uncertainty of every difference between them.
# TYPE clockwatch_clock_sample_uncertainty_seconds gauge
clockwatch_clock_sample_uncertainty_seconds 2e-06
# HELP clockwatch_clock_suspended_seconds CLOCK_BOOTTIME minus CLOCK_MONOTONIC: time spent suspended since boot.
# TYPE clockwatch_clock_suspended_seconds gauge
clockwatch_clock_suspended_seconds 2.0005
# HELP clockwatch_clock_tai_offset_seconds CLOCK_TAI minus CLOCK_REALTIME, to the second: the TAI offset the kernel applies.
# TYPE clockwatch_clock_tai_offset_seconds gauge
clockwatch_clock_tai_offset_seconds 37
# HELP clockwatch_clock_up Whether the clock probe could be read (1) or not (0).
# TYPE clockwatch_clock_up gauge
clockwatch_clock_up 1
# HELP clockwatch_clock_wall_boot_gap_seconds CLOCK_REALTIME minus CLOCK_BOOTTIME: moves only when the wall clock is stepped or slewed, not on suspend.
# TYPE clockwatch_clock_wall_boot_gap_seconds gauge
clockwatch_clock_wall_boot_gap_seconds 1.7999999e+09
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want),
		"clockwatch_clock_frequency_correction_ratio", "clockwatch_clock_realtime_seconds",
		"clockwatch_clock_sample_uncertainty_seconds", "clockwatch_clock_suspended_seconds",
		"clockwatch_clock_tai_offset_seconds", "clockwatch_clock_up", "clockwatch_clock_wall_boot_gap_seconds"); err != nil {
		t.Error(err)
	}
}

func TestKernelUpdater(t *testing.T) {
	t.Parallel()
	tx := &hostclocktest.Timex{Raw: kernel.RawTimex{Offset: -2500, Freq: 655360, MaxError: 16_000_000, EstError: 1500,
		Status: kernel.StatusPLL | kernel.StatusInsert, Constant: 7, Precision: 1, Tolerance: 32768000, Tick: 10000, TAI: 37,
		State: int(kernel.TimeIns)}}
	c := NewScraper(quiet, NewKernelUpdater(tx))
	want := `
# HELP clockwatch_kernel_clock_state The kernel's clock state (adjtimex return value): 1 for the current state.
# TYPE clockwatch_kernel_clock_state gauge
clockwatch_kernel_clock_state{state="TIME_DEL"} 0
clockwatch_kernel_clock_state{state="TIME_ERROR"} 0
clockwatch_kernel_clock_state{state="TIME_INS"} 1
clockwatch_kernel_clock_state{state="TIME_OK"} 0
clockwatch_kernel_clock_state{state="TIME_OOP"} 0
clockwatch_kernel_clock_state{state="TIME_WAIT"} 0
# HELP clockwatch_kernel_frequency_offset_ratio Frequency offset the kernel applies to the clock, as a ratio near 0 (adjtimex freq; node_exporter's node_timex_frequency_adjustment_ratio is 1 + this).
# TYPE clockwatch_kernel_frequency_offset_ratio gauge
clockwatch_kernel_frequency_offset_ratio 1e-05
# HELP clockwatch_kernel_leap_pending Leap second pending at the end of the UTC day: 1 insert, -1 delete, 0 none.
# TYPE clockwatch_kernel_leap_pending gauge
clockwatch_kernel_leap_pending 1
# HELP clockwatch_kernel_maxerror_seconds Kernel maximum error bound; saturates at 16 s when nothing disciplines the clock.
# TYPE clockwatch_kernel_maxerror_seconds gauge
clockwatch_kernel_maxerror_seconds 16
# HELP clockwatch_kernel_offset_seconds Phase offset the kernel PLL is still correcting (adjtimex offset).
# TYPE clockwatch_kernel_offset_seconds gauge
clockwatch_kernel_offset_seconds -0.0025
# HELP clockwatch_kernel_synchronized Whether the kernel considers the clock synchronised: STA_UNSYNC clear and state not TIME_ERROR (1) or not (0).
# TYPE clockwatch_kernel_synchronized gauge
clockwatch_kernel_synchronized 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want),
		"clockwatch_kernel_clock_state", "clockwatch_kernel_frequency_offset_ratio", "clockwatch_kernel_leap_pending",
		"clockwatch_kernel_maxerror_seconds", "clockwatch_kernel_offset_seconds", "clockwatch_kernel_synchronized"); err != nil {
		t.Error(err)
	}
}

// An impossible offset is counted and not exported.
func TestKernelUpdaterArtifact(t *testing.T) {
	t.Parallel()
	tx := &hostclocktest.Timex{Raw: kernel.RawTimex{Offset: 1 << 32, Status: kernel.StatusNano}}
	c := NewScraper(quiet, NewKernelUpdater(tx))
	for range 3 {
		if n := testutil.CollectAndCount(c, MetricKernelOffset); n != 0 {
			t.Fatalf("%s exported %d times for an artifact", MetricKernelOffset, n)
		}
	}
	// The comparison scrapes a fourth time.
	want := `
# HELP clockwatch_kernel_offset_artifacts_total Offsets read back larger than the kernel ever holds (such as the transient 2^32 ns seen on KVM), dropped rather than reported.
# TYPE clockwatch_kernel_offset_artifacts_total counter
clockwatch_kernel_offset_artifacts_total 4
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), MetricKernelOffsetArtifacts); err != nil {
		t.Error(err)
	}
}

func TestScraperReportsFailure(t *testing.T) {
	t.Parallel()
	c := NewScraper(quiet, NewKernelUpdater(&hostclocktest.Timex{Err: errors.New("adjtimex: operation not permitted")}),
		NewClockUpdater(&hostclocktest.Clocks{Err: errors.New("no clocks")}))
	want := `
# HELP clockwatch_clock_up Whether the clock probe could be read (1) or not (0).
# TYPE clockwatch_clock_up gauge
clockwatch_clock_up 0
# HELP clockwatch_kernel_up Whether the kernel probe could be read (1) or not (0).
# TYPE clockwatch_kernel_up gauge
clockwatch_kernel_up 0
# HELP clockwatch_scrape_collector_success Whether the collector's last scrape succeeded (1) or failed (0).
# TYPE clockwatch_scrape_collector_success gauge
clockwatch_scrape_collector_success{collector="clock"} 0
clockwatch_scrape_collector_success{collector="kernel"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want),
		"clockwatch_clock_up", "clockwatch_kernel_up", "clockwatch_scrape_collector_success"); err != nil {
		t.Error(err)
	}
}

func TestLint(t *testing.T) {
	t.Parallel()
	for _, c := range []prometheus.Collector{
		NewScraper(quiet, NewClockUpdater(hostclock.SysClocks{}), NewKernelUpdater(hostclock.SysTimex{})),
		NewReloadMetrics(time.Now()),
	} {
		problems, err := testutil.CollectAndLint(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Errorf("%s: %s", p.Metric, p.Text)
		}
	}
}

// TestRegistryIsPedantic runs the production collectors through the
// pedantic registry: what the daemon's non-pedantic registry no longer
// checks on every scrape is checked here.
func TestRegistryIsPedantic(t *testing.T) {
	t.Parallel()
	reg, err := NewPedanticRegistry(NewScraper(quiet, NewClockUpdater(hostclock.SysClocks{}), NewKernelUpdater(hostclock.SysTimex{})),
		NewReloadMetrics(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Gather(); err != nil {
		t.Fatalf("Gather() = %v", err)
	}
}

// BenchmarkScrape is a whole /metrics request over the real updaters,
// including the Go and process collectors and the text encoding.
func BenchmarkScrape(b *testing.B) {
	reg, err := NewRegistry(NewScraper(quiet, NewClockUpdater(hostclock.SysClocks{}), NewKernelUpdater(hostclock.SysTimex{})),
		NewReloadMetrics(time.Now()))
	if err != nil {
		b.Fatal(err)
	}
	h := MetricsHandler(reg, nil)
	req := httptest.NewRequest("GET", "/metrics", nil)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
	}
}

// BenchmarkScrapeClockwatchOnly gathers only clockwatch's own collectors.
func BenchmarkScrapeClockwatchOnly(b *testing.B) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewScraper(quiet, NewClockUpdater(hostclock.SysClocks{}), NewKernelUpdater(hostclock.SysTimex{})))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}

// blockingCollector holds every Collect until release is closed, and
// counts the collections.
type blockingCollector struct {
	desc    *prometheus.Desc
	release chan struct{}
	started chan struct{}
	n       atomic.Int64
}

func (c *blockingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }
func (c *blockingCollector) Collect(ch chan<- prometheus.Metric) {
	if c.n.Add(1) == 1 {
		close(c.started)
	}
	<-c.release
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1)
}

// TestMetricsHandlerServesConcurrentScrapes: scrapes that arrive together
// (two Prometheus servers of an HA pair, or more) are all served, from one
// collection, not refused with 503.
func TestMetricsHandlerServesConcurrentScrapes(t *testing.T) {
	t.Parallel()
	c := &blockingCollector{desc: prometheus.NewDesc("test_blocking", "Blocks.", nil, nil),
		release: make(chan struct{}), started: make(chan struct{})}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	h := MetricsHandler(reg, nil)
	const n = 10
	codes := make(chan int, n)
	serve := func() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
		codes <- w.Code
	}
	go serve()
	<-c.started // the first scrape is collecting: the others arrive during it
	for range n - 1 {
		go serve()
	}
	time.Sleep(50 * time.Millisecond)
	close(c.release)
	for range n {
		if code := <-codes; code != 200 {
			t.Errorf("a concurrent scrape got %d, want 200", code)
		}
	}
	if got := c.n.Load(); got >= n {
		t.Errorf("%d collections for %d concurrent scrapes, want them to share", got, n)
	}
}
