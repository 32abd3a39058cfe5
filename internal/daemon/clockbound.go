package daemon

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/clockwatch/clockwatch/internal/clockbound"
	"github.com/clockwatch/clockwatch/internal/timesources"
	"github.com/clockwatch/clockwatch/probe/chrony"
	"github.com/clockwatch/clockwatch/stepdown/server"
	"github.com/clockwatch/clockwatch/timesource"
)

// segmentPath chooses the clockbound segment: the configured path, except
// that the default follows systemd's RuntimeDirectory= when set, like the
// stepdown socket.
func segmentPath(cfg clockbound.Config, getenv func(string) string) string {
	if cfg.Path != clockbound.DefaultPath {
		return cfg.Path
	}
	if dir := getenv("RUNTIME_DIRECTORY"); dir != "" {
		return filepath.Join(dir, "clockbound", filepath.Base(clockbound.DefaultPath))
	}
	return cfg.Path
}

// NewClockBound creates the segment, so that a path that cannot be written
// fails the start with a message that says why, and returns the publisher
// that keeps it current from the time sources and the stepdown
// announcement (sd nil when stepdown is off).
func NewClockBound(cfg clockbound.Config, sources *timesources.Sources, sd *server.Server, logger *slog.Logger) (*clockbound.Publisher, error) {
	path := segmentPath(cfg, os.Getenv)
	mode, err := cfg.FileMode()
	if err != nil {
		return nil, fmt.Errorf("clockbound.mode: %w", err)
	}
	gid, err := clockbound.LookupGroup(cfg.Group)
	if err != nil {
		return nil, err
	}
	seg, err := clockbound.Create(path, os.FileMode(mode), gid)
	if err != nil {
		return nil, fmt.Errorf("clockbound segment: %w; set clockbound.path to a writable path (or RUNTIME_DIRECTORY), or clockbound.enabled: false", err)
	}
	opts := clockbound.Options{Readings: authoritativeReadings(sources), Logger: logger}
	if sd != nil {
		opts.Announcer = sd
	}
	return clockbound.NewPublisher(cfg, seg, opts), nil
}

// authoritativeReadings adapts today's time-source state to the normalised
// readings the segment takes: chrony's status, when chrony is polled.
func authoritativeReadings(sources *timesources.Sources) func() []timesource.Reading {
	return func() []timesource.Reading {
		if sources == nil || sources.Chrony == nil {
			return nil
		}
		return []timesource.Reading{chronyReading(sources.Chrony.Status())}
	}
}

// chronyReading is one chrony status as a timesource.Reading.
func chronyReading(st chrony.Status) timesource.Reading {
	r := timesource.Reading{Source: server.ChronySource, Role: timesource.Authoritative, Found: st.Valid, Up: st.Up, Err: st.Err,
		HasData: st.Valid, Synchronized: st.Synchronised, Offset: seconds(st.SystemOffset), ErrorBound: seconds(st.ErrorBound),
		LastSuccess: st.LastSuccess}
	switch st.Leap {
	case chrony.LeapInsertSecond:
		r.Leap = timesource.LeapInsert
	case chrony.LeapDeleteSecond:
		r.Leap = timesource.LeapDelete
	case chrony.LeapUnsynchronised:
		r.Leap = timesource.LeapUnsynchronized
	}
	return r
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
