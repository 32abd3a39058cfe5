package daemon_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/trace"
	"slices"
	"strings"
	"testing"
	"time"

	xtrace "golang.org/x/exp/trace"

	"github.com/clockwatch/clockwatch/internal/chronydtest"
	"github.com/clockwatch/clockwatch/internal/config"
	"github.com/clockwatch/clockwatch/internal/daemon"
	"github.com/clockwatch/clockwatch/internal/host"
	"github.com/clockwatch/clockwatch/internal/testtool"
)

// idleWindow is how long TestIdleWakeups counts the idle daemon's wake-ups.
const idleWindow = 24 * time.Second

// idleMark is the category of the trace's log event that starts the count.
const idleMark = "idle"

// TestIdleWakeups runs the daemon with the default configuration next to a
// real chronyd -x on chrony's default polls, waits for it to settle, and
// counts its periodic wake-ups for idleWindow with the Go runtime's
// execution tracer: every time a timer (a ticker, a timer, a sleep, or
// the kernel's timerfd of internal/ktimer, which every periodic wait of the
// idle daemon now is) makes one of the daemon's goroutines runnable. That
// is what a periodic wake-up
// is in a Go process: each one takes a thread off its sleep (often the
// runtime's monitor thread besides: about 3 thread wake-ups on the
// development VM, docs/performance.md), whatever work follows. Two tickers
// that fire within microseconds of each other may share the threads'
// wake-up, but they are still two timers: two goroutine switches and the
// runtime's timer work twice (make bench-peers measured 0.4–1.1 thread
// wake-ups a second for the second one). With no subscriber and only
// chronyd, nothing needs to wake every second: chronyd's polls feed the
// policy, the heartbeat has nobody to beat for, so the pulse's second rests
// (pulse.Rest) on the clockbound segment's 4 s wake-ups, where the idle
// clock samples are taken too (pulse: one timer for all), and chronyd is
// polled at its own updates (its exit watched through its pid file).
// Before, the pulse woke every second.
//
// Not parallel: the tracer sees the whole test binary, and a parallel
// test's goroutines in the module's code would be counted.
func TestIdleWakeups(t *testing.T) {
	testtool.Short(t)
	c := chronydtest.Start(t, chronydtest.Options{Poll: "iburst", Drift: "0.000 1.000"})
	waitSettled(t, c)
	cfg := config.Default()
	cfg.Chrony.Address = c.Socket
	// chronyd's exit is watched (as /run/chrony/chronyd.pid is on a
	// host): the polls follow its updates up to 64 s apart.
	cfg.Chrony.PIDFile = c.PIDFile
	state, run := t.TempDir(), t.TempDir()
	env := map[string]string{"STATE_DIRECTORY": state, "RUNTIME_DIRECTORY": run}
	var log bytes.Buffer
	d := daemon.New(&cfg, daemon.Options{Env: host.Env{Getenv: func(k string) string { return env[k] }}},
		slog.New(slog.NewTextHandler(&log, nil)))
	// The tracer runs from before the start, so that every goroutine's
	// waits are seen with their stacks; the count starts at the mark.
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	defer trace.Stop()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
	}()
	// The start looks at the sources every 20 ms until each has reported;
	// then it idles.
	time.Sleep(3 * time.Second)
	trace.Log(ctx, idleMark, "start")
	time.Sleep(idleWindow)
	trace.Stop()
	wakes, err := timerWakeups(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var total, pulsed int
	var report, everySecond, goTimers []string
	for _, w := range wakes {
		total += w.n
		if strings.Contains(w.where, "/internal/pulse.") {
			pulsed += w.n
		}
		line := fmt.Sprintf("%4d  goroutine %d waiting in %s", w.n, w.g, w.where)
		report = append(report, line)
		if float64(w.n) >= idleWindow.Seconds()-1 {
			everySecond = append(everySecond, line)
		}
		if !strings.HasSuffix(w.where, kernelTimerOwned) {
			goTimers = append(goTimers, line)
		}
	}
	perSecond := float64(total) / idleWindow.Seconds()
	t.Logf("%d timer wake-ups of the daemon's goroutines in %s (%.2f a second):\n%s",
		total, idleWindow, perSecond, strings.Join(report, "\n"))
	// Every periodic wait is the kernel's timer (internal/ktimer): a Go
	// timer's 4 s wait cost about eight thread wake-ups, a timerfd's
	// three (make bench-peers).
	if len(goTimers) != 0 {
		t.Errorf("%d goroutines woke on Go timers while idle, want none (internal/ktimer):\n%s", len(goTimers), strings.Join(goTimers, "\n"))
	}
	if len(everySecond) != 0 {
		t.Errorf("%d goroutines woke every second, want none (no subscriber, only chronyd):\n%s", len(everySecond), strings.Join(everySecond, "\n"))
	}
	// One pulse for all periodic work: the clockbound segment's 4 s
	// rewrite (the floor: ClockBound's readers take a status older than
	// 5 s for free running) and, on the same wake-ups, the feed's rest
	// and the idle clock samples (10 s, taken on the 8th second). Before,
	// the sampler, the resting second and the segment woke apart (11 in
	// 24 s).
	if want := int(idleWindow/(4*time.Second)) + 1; pulsed > want {
		t.Errorf("the pulse woke %d times in %s, want at most %d (every 4 s: everything periodic on the segment's wake-ups)", pulsed, idleWindow, want)
	}
	// Besides: chrony's poller, at chronyd's updates up to 64 s apart
	// (chrony.watched_max_poll_interval: its exit is watched), which in
	// the test's first minute still follow the tail of chronyd's iburst
	// (2 s apart, then backing off: 4–6 in 24 s); the looks for ptp4l,
	// ntpd, timesyncd and VMClock every 30 s. 0.46 a second measured
	// (0.25 of it the segment); 0.67–0.75 before, 1.5–1.6 with the pulse
	// beating every second.
	if perSecond > 0.6 {
		t.Errorf("%.2f timer wake-ups a second while idle, want at most 0.6", perSecond)
	}
}

// wakeup is how often a timer woke goroutines that waited at one place.
type wakeup struct {
	g     xtrace.GoID
	where string
	n     int
}

// timerWakeups reads an execution trace and counts, by goroutine (and the
// function of the daemon it waited in), the times a timer made runnable: a goroutine waiting on a
// channel or in a select, or asleep, that becomes runnable with no
// goroutine running to wake it (the scheduler ran the timer). Goroutines
// woken by the network poller (a reply from chronyd) or by another
// goroutine are not periodic and are not counted, nor are the test's own.
func timerWakeups(r io.Reader) ([]wakeup, error) {
	tr, err := xtrace.NewReader(r)
	if err != nil {
		return nil, err
	}
	waitedAt := map[xtrace.GoID]string{}
	reason := map[xtrace.GoID]string{}
	// creator is the daemon's function that started each goroutine: a
	// kernel timer's reader is counted as its owner's (internal/ktimer).
	creator := map[xtrace.GoID]string{}
	type key struct {
		g     xtrace.GoID
		where string
	}
	count := map[key]int{}
	counting := false
	for {
		ev, err := tr.ReadEvent()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if ev.Kind() == xtrace.EventLog && ev.Log().Category == idleMark {
			counting = true
		}
		if ev.Kind() != xtrace.EventStateTransition {
			continue
		}
		st := ev.StateTransition()
		if st.Resource.Kind != xtrace.ResourceGoroutine {
			continue
		}
		id := st.Resource.Goroutine()
		from, to := st.Goroutine()
		if from == xtrace.GoNotExist {
			creator[id] = waiter(ev.Stack(), kernelTimerPkg)
			continue
		}
		if to == xtrace.GoWaiting && from != xtrace.GoRunning {
			// A new generation of the trace restates each goroutine's
			// state, without the stack of its wait: keep the one seen.
			continue
		}
		if to == xtrace.GoWaiting {
			waitedAt[id], reason[id] = waiter(st.Stack, ""), st.Reason
			if strings.Contains(waitedAt[id], kernelTimerPkg) && creator[id] != "" {
				waitedAt[id], reason[id] = creator[id]+kernelTimerOwned, kernelTimerWait
			}
			continue
		}
		if from != xtrace.GoWaiting || to != xtrace.GoRunnable {
			continue
		}
		where := waitedAt[id]
		if !counting || ev.Goroutine() != xtrace.NoGoroutine || where == "" {
			continue
		}
		switch reason[id] {
		case "select", "chan receive", "sleep", kernelTimerWait:
			count[key{id, where}]++
		}
	}
	var out []wakeup
	for k, n := range count {
		out = append(out, wakeup{k.g, k.where, n})
	}
	slices.SortFunc(out, func(a, b wakeup) int { return b.n - a.n })
	return out, nil
}

// kernelTimerPkg names internal/ktimer's functions: its timer's reader
// waits in the network poller for the kernel's timerfd, and each fire is a
// timer wake-up of the goroutine that started it.
const kernelTimerPkg = "/internal/ktimer."

// kernelTimerWait is the reason counted for a kernel timer's fire, and
// kernelTimerOwned follows its owner's name in the report.
const (
	kernelTimerWait  = "kernel timer"
	kernelTimerOwned = " (its kernel timer)"
)

// waiter is the innermost function of the daemon (the module's code, not
// the test's) in a goroutine's stack, skipping those whose name holds
// skip (when not ""); "" for any other goroutine.
func waiter(s xtrace.Stack, skip string) string {
	for f := range s.Frames() {
		if skip != "" && strings.Contains(f.Func, skip) {
			continue
		}
		if strings.HasPrefix(f.Func, "github.com/clockwatch/clockwatch/") {
			if strings.Contains(f.Func, "_test.") {
				return ""
			}
			return f.Func
		}
	}
	return ""
}
