package daemon

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/clockwatch/clockwatch/internal/announce"
	"github.com/clockwatch/clockwatch/internal/clockbound"
	"github.com/clockwatch/clockwatch/internal/probe/ptp"
	"github.com/clockwatch/clockwatch/internal/pulse"
	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/clockwatch/clockwatch/internal/timesources"
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
// that keeps it current from the time sources and the announcer, whose
// transport it is, whether the stepdown socket is on or not.
func NewClockBound(cfg clockbound.Config, sources *timesources.Sources, ann *announce.Announcer, pl *pulse.Pulse, logger *slog.Logger) (*clockbound.Publisher, error) {
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
	opts := clockbound.Options{Readings: authoritativeReadings(sources), Logger: logger, Pulse: pl, Announcer: ann}
	return clockbound.NewPublisher(cfg, seg, opts), nil
}

// authoritativeReadings gives the segment the readings the stepdown policy
// judges (it keeps the authoritative ones). ptp4l's is left out: with
// hardware timestamping it bounds the PTP hardware clock, not
// CLOCK_REALTIME, and phc2sys's offset is not visible to clockwatch.
func authoritativeReadings(sources *timesources.Sources) func() []timesource.Reading {
	return func() []timesource.Reading {
		if sources == nil {
			return nil
		}
		var rs []timesource.Reading
		for _, r := range sources.Readings().Sorted() {
			if r.Source != ptp.SourceName {
				rs = append(rs, r)
			}
		}
		return rs
	}
}
