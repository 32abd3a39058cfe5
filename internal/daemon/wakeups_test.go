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
// execution tracer: every time a timer (a ticker, a timer, a sleep) makes
// one of the daemon's goroutines runnable. That is what a periodic wake-up
// is in a Go process: each one takes a thread off its sleep (often the
// runtime's monitor thread besides: about 3 thread wake-ups on the
// development VM, docs/performance.md), whatever work follows. Two tickers
// that fire within microseconds of each other may share the threads'
// wake-up, but they are still two timers: two goroutine switches and the
// runtime's timer work twice (make bench-peers measured 0.4–1.1 thread
// wake-ups a second for the second one). With no subscriber and only
// chronyd, nothing needs to wake every second: chronyd's polls feed the
// policy, the heartbeat has nobody to beat for, so the pulse's second rests
// (pulse.Rest) and the clockbound segment is written on its own 4 s period
// (and when its figures change). Before, the pulse woke every second.
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
	var total int
	var report, everySecond []string
	for _, w := range wakes {
		total += w.n
		line := fmt.Sprintf("%4d  goroutine %d waiting in %s", w.n, w.g, w.where)
		report = append(report, line)
		if float64(w.n) >= idleWindow.Seconds()-1 {
			everySecond = append(everySecond, line)
		}
	}
	perSecond := float64(total) / idleWindow.Seconds()
	t.Logf("%d timer wake-ups of the daemon's goroutines in %s (%.2f a second):\n%s",
		total, idleWindow, perSecond, strings.Join(report, "\n"))
	if len(everySecond) != 0 {
		t.Errorf("%d goroutines woke every second, want none (no subscriber, only chronyd):\n%s", len(everySecond), strings.Join(everySecond, "\n"))
	}
	// The pulse's resting second (1/8), the clockbound segment (1/4),
	// chrony's poller (1/8 to 1/2: a minute between chronyd's updates once
	// it has settled, capped by chrony.max_poll_interval, 8 s, at least
	// chrony.poll_interval apart while its iburst lasts), the sampler
	// (1/10), the looks for ptp4l and ntpd (1/30 each): 0.67–1.04. The
	// pulse beating every second made it 1.5–1.6.
	if perSecond > 1.1 {
		t.Errorf("%.2f timer wake-ups a second while idle, want at most 1.1", perSecond)
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
		if to == xtrace.GoWaiting && from != xtrace.GoRunning {
			// A new generation of the trace restates each goroutine's
			// state, without the stack of its wait: keep the one seen.
			continue
		}
		if to == xtrace.GoWaiting {
			waitedAt[id], reason[id] = waiter(st.Stack), st.Reason
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
		case "select", "chan receive", "sleep":
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

// waiter is the innermost function of the daemon (the module's code, not
// the test's) in a waiting goroutine's stack; "" for any other goroutine.
func waiter(s xtrace.Stack) string {
	for f := range s.Frames() {
		if strings.HasPrefix(f.Func, "github.com/clockwatch/clockwatch/") {
			if strings.Contains(f.Func, "_test.") {
				return ""
			}
			return f.Func
		}
	}
	return ""
}
