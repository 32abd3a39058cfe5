// Package ktimer is a one-shot timer that the kernel fires on time: a
// timerfd in Go's network poller where Linux has one, a time.Timer
// elsewhere.
//
// Why not Go's own timers for the idle daemon's waits: the runtime waits for
// its timers in epoll_pwait, whose timeout the kernel lets run late by 0.1 %
// of the wait (select_estimate_accuracy: up to 4 ms for a 4 s wait, 30 ms
// for 30 s), while the runtime's monitor thread (sysmon) sleeps until the
// timer precisely, wakes, finds it not yet run, and polls in 20 µs steps
// until the late thread has run it. On the development VM that made each
// wake-up of a 4 s period cost about eight thread wake-ups; a timerfd, which
// the kernel fires with no slack, wakes the poller's thread on time and
// costs about three (docs/performance.md, "Idle: the kernel's timer").
// internal/pulse and internal/loop wait on it, so the idle daemon has no Go
// timer left.
package ktimer
