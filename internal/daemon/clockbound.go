package daemon

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/clockwatch/clockwatch/internal/announce"
	"github.com/clockwatch/clockwatch/internal/clockbound"
	"github.com/clockwatch/clockwatch/internal/pulse"
	"github.com/clockwatch/clockwatch/internal/timesource"
	"github.com/clockwatch/clockwatch/internal/transport/segment"
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

// NewClockBound creates the segment at path (segmentPath), so that a path that cannot be written
// fails the start with a message that says why, and returns the publisher
// that keeps it current from readings (those of the sources that bound
// CLOCK_REALTIME: timesources.Members.BoundingReadings) and the announcer,
// whose transport it is, whether the stepdown socket is on or not.
func NewClockBound(path string, cfg clockbound.Config, readings func() []timesource.Reading, ann *announce.Announcer, pl *pulse.Pulse, logger *slog.Logger) (*segment.Publisher, error) {
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
	opts := segment.Options{Readings: readings, Logger: logger, Pulse: pl}
	if ann != nil { // a nil *Announcer in the interface would not be nil
		opts.Announcer = ann
	}
	return segment.NewPublisher(cfg, seg, opts), nil
}
