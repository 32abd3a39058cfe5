package socket

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// logLimiter bounds the log lines any peer of the socket can cause: every
// member of the socket's group could connect, be refused or misbehave in a
// loop (10,001 lines in 1.24 s; 280 MB in two minutes of churn), and under
// journald's rate limit that drops clockwatch's own lines, the stepdown
// events among them. Per kind of line it lets burst lines through per
// window, counts the rest, and says how many it held back with the next
// line of that kind after the window. The stepdown events never go through
// it (the announcer logs them itself), and the metrics count every case.
type logLimiter struct {
	log    *slog.Logger
	window time.Duration
	burst  int
	now    func() time.Time

	mu    sync.Mutex
	kinds map[string]*logWindow
}

type logWindow struct {
	start      time.Time
	logged     int
	suppressed int
}

// logBurst and logWindowLen: at most 5 lines of each kind a minute.
const (
	logBurst     = 5
	logWindowLen = time.Minute
)

func newLogLimiter(log *slog.Logger) *logLimiter {
	return &logLimiter{log: log, window: logWindowLen, burst: logBurst, now: time.Now, kinds: map[string]*logWindow{}}
}

// Log logs msg at level unless burst lines of its kind (msg) were logged in
// the current window; the first line after a window with lines held back
// carries their count ("suppressed") and the window's length.
func (l *logLimiter) Log(level slog.Level, msg string, args ...any) {
	now := l.now()
	l.mu.Lock()
	w := l.kinds[msg]
	if w == nil {
		w = &logWindow{start: now}
		l.kinds[msg] = w
	}
	if now.Sub(w.start) >= l.window {
		if w.suppressed > 0 {
			args = append(args, "suppressed", w.suppressed, "suppressed_over", now.Sub(w.start).Round(time.Second).String())
		}
		*w = logWindow{start: now}
	}
	if w.logged >= l.burst {
		w.suppressed++
		l.mu.Unlock()
		return
	}
	w.logged++
	last := w.logged == l.burst
	l.mu.Unlock()
	if last {
		args = append(args, "note", "more lines like this in the next "+l.window.String()+" are counted, not logged")
	}
	l.log.Log(context.Background(), level, msg, args...)
}
