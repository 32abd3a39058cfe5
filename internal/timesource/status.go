package timesource

import (
	"context"
	"io/fs"
	"time"
)

// Host is what a source's one poll for `clockwatch status` may read besides
// its section: /proc, the process's environment and the time of the poll.
type Host struct {
	// Proc is /proc (chrony finds there which chrony.conf chronyd runs).
	Proc fs.FS
	// Getenv is the process's environment; nil is an empty one. Sources
	// never read the environment themselves.
	Getenv func(string) string
	// Now is when the poll is made.
	Now time.Time
}

// Env returns the environment variable key ("" when unset or no
// environment is given).
func (h Host) Env(key string) string {
	if h.Getenv == nil {
		return ""
	}
	return h.Getenv(key)
}

// Status is what a source shows in `clockwatch status`: its reading, its
// rich state as lines and what its data shows beyond the reading.
type Status struct {
	Reading Reading
	Lines   []Line
	Notes   []Note
}

// StatusFunc is every source's StatusOnce: one poll of the source
// configured by cfg, as its daemon poller would make it; ok is false, and
// there is nothing to show, when it is off or, under "auto", absent.
type StatusFunc[C any] func(ctx context.Context, cfg C, host Host) (s Status, ok bool)
