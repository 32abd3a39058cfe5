package step

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

type fakeJournal bool

func (f fakeJournal) Persistent() bool { return bool(f) }

type fakeWatcher bool

func (f fakeWatcher) Watching() bool { return bool(f) }

type fakeBus uint64

func (f fakeBus) Dropped() uint64 { return uint64(f) }

func TestCollector(t *testing.T) {
	t.Parallel()
	s := newSim(DefaultConfig(), State{Epoch: 4, Seq: 10})
	for _, o := range []op{
		ticks(3, tick), stepBy(-12400 * time.Millisecond), mark(), ticks(1, tick),
		stepBy(2 * time.Second), ticks(3, tick), mark(), suspend(time.Hour), ticks(1, tick),
	} {
		o(s)
	}
	var g Gauges
	g.store(s.d, 2)
	c := NewCollector(&g, fakeJournal(true), fakeBus(3), fakeWatcher(true))
	for _, e := range s.events {
		c.Record(e)
	}
	wall := float64(s.events[1].WallAfter.UnixNano()) / 1e9
	want := `
# HELP clockwatch_clock_event_publish_delay_seconds Latency from the kernel's clock-set notification (the watcher's CLOCK_MONOTONIC read as it woke) to the event being on the in-process bus, for every event a notification revealed (steps, clock sets, resumes): clockwatch's own part of the detection latency.
# TYPE clockwatch_clock_event_publish_delay_seconds histogram
clockwatch_clock_event_publish_delay_seconds_bucket{le="1e-05"} 0
clockwatch_clock_event_publish_delay_seconds_bucket{le="0.0001"} 0
clockwatch_clock_event_publish_delay_seconds_bucket{le="0.001"} 0
clockwatch_clock_event_publish_delay_seconds_bucket{le="0.01"} 0
clockwatch_clock_event_publish_delay_seconds_bucket{le="0.1"} 0
clockwatch_clock_event_publish_delay_seconds_bucket{le="1"} 0
clockwatch_clock_event_publish_delay_seconds_bucket{le="+Inf"} 0
clockwatch_clock_event_publish_delay_seconds_sum 0
clockwatch_clock_event_publish_delay_seconds_count 0
# HELP clockwatch_bus_events_dropped_total Events dropped for in-process subscribers whose buffer was full.
# TYPE clockwatch_bus_events_dropped_total counter
clockwatch_bus_events_dropped_total 3
# HELP clockwatch_clock_epoch Clock epoch: the number of wall-clock discontinuities, persisted across restarts; it never goes back.
# TYPE clockwatch_clock_epoch gauge
clockwatch_clock_epoch 6
# HELP clockwatch_clock_largest_step_seconds Largest absolute step of the wall clock seen since clockwatch started, in seconds.
# TYPE clockwatch_clock_largest_step_seconds gauge
clockwatch_clock_largest_step_seconds 12.4
# HELP clockwatch_clock_last_step_seconds Signed size of the last step of the wall clock in seconds (negative: backwards); 0 before any.
# TYPE clockwatch_clock_last_step_seconds gauge
clockwatch_clock_last_step_seconds 2
# HELP clockwatch_clock_last_step_timestamp_seconds Wall-clock time of the last step (after it), in seconds since the Unix epoch; 0 before any.
# TYPE clockwatch_clock_last_step_timestamp_seconds gauge
clockwatch_clock_last_step_timestamp_seconds ` + strings.TrimSpace(formatFloat(wall)) + `
# HELP clockwatch_clock_resumes_total Resumes from suspend seen (BOOTTIME advanced beyond MONOTONIC).
# TYPE clockwatch_clock_resumes_total counter
clockwatch_clock_resumes_total 1
# HELP clockwatch_clock_set_events_total Clock-set notifications from the kernel with no measurable step (not counting those explained by a step or a resume).
# TYPE clockwatch_clock_set_events_total counter
clockwatch_clock_set_events_total 1
# HELP clockwatch_clock_set_watcher_up 1 while the kernel's clock-set notifications (a CANCEL_ON_SET timerfd) are watched; 0 means steps are seen by sampling only, up to one interval late and only above the slew allowance.
# TYPE clockwatch_clock_set_watcher_up gauge
clockwatch_clock_set_watcher_up 1
# HELP clockwatch_clock_slew_rate_ratio Rate at which the REALTIME−BOOTTIME gap changes outside steps, as a ratio, over the last slew window. On Linux slews move both clocks, so this stays near 0.
# TYPE clockwatch_clock_slew_rate_ratio gauge
clockwatch_clock_slew_rate_ratio 0
# HELP clockwatch_clock_step_detection_delay_seconds Step detection delay in seconds: from the kernel's clock-set notification to the event, or the sampling interval (an upper bound) when sampling alone saw the step.
# TYPE clockwatch_clock_step_detection_delay_seconds histogram
clockwatch_clock_step_detection_delay_seconds_bucket{le="1e-05"} 0
clockwatch_clock_step_detection_delay_seconds_bucket{le="2.5e-05"} 0
clockwatch_clock_step_detection_delay_seconds_bucket{le="5e-05"} 0
clockwatch_clock_step_detection_delay_seconds_bucket{le="0.0001"} 1
clockwatch_clock_step_detection_delay_seconds_bucket{le="0.00025"} 1
clockwatch_clock_step_detection_delay_seconds_bucket{le="0.0005"} 1
clockwatch_clock_step_detection_delay_seconds_bucket{le="0.001"} 1
clockwatch_clock_step_detection_delay_seconds_bucket{le="0.0025"} 1
clockwatch_clock_step_detection_delay_seconds_bucket{le="0.005"} 1
clockwatch_clock_step_detection_delay_seconds_bucket{le="0.01"} 1
clockwatch_clock_step_detection_delay_seconds_bucket{le="0.025"} 1
clockwatch_clock_step_detection_delay_seconds_bucket{le="0.05"} 1
clockwatch_clock_step_detection_delay_seconds_bucket{le="0.1"} 2
clockwatch_clock_step_detection_delay_seconds_bucket{le="0.25"} 2
clockwatch_clock_step_detection_delay_seconds_bucket{le="0.5"} 2
clockwatch_clock_step_detection_delay_seconds_bucket{le="1"} 2
clockwatch_clock_step_detection_delay_seconds_bucket{le="+Inf"} 2
clockwatch_clock_step_detection_delay_seconds_sum 0.100052
clockwatch_clock_step_detection_delay_seconds_count 2
# HELP clockwatch_clock_steps_total Steps of the wall clock (leap seconds included) seen since clockwatch started, by direction.
# TYPE clockwatch_clock_steps_total counter
clockwatch_clock_steps_total{direction="backward"} 1
clockwatch_clock_steps_total{direction="forward"} 1
# HELP clockwatch_journal_persistence_ok 1 when step events and the clock epoch are persisted under the state directory, 0 when clockwatch runs without persistence.
# TYPE clockwatch_journal_persistence_ok gauge
clockwatch_journal_persistence_ok 1
# HELP clockwatch_step_sample_errors_total Clock samples that could not be read.
# TYPE clockwatch_step_sample_errors_total counter
clockwatch_step_sample_errors_total 2
# HELP clockwatch_step_samples_total Clock samples compared by the step detector.
# TYPE clockwatch_step_samples_total counter
clockwatch_step_samples_total 10
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
