package journal

import (
	"fmt"
	"path/filepath"
	"strings"
)

// ConfigKey is the top-level YAML key this package's Config is expected under.
const ConfigKey = "journal"

// File names under the state directory.
const (
	EventsFile  = "events.jsonl"
	RotatedFile = "events.jsonl.1"
	StateFile   = "state.json"
)

// DefaultDir is the state directory when neither the configuration nor
// systemd names one.
const DefaultDir = "/var/lib/clockwatch"

// Config says where the journal lives and how large it may grow.
type Config struct {
	// Dir is the state directory. Empty means systemd's
	// StateDirectory=clockwatch (the STATE_DIRECTORY environment variable)
	// when set, else DefaultDir; see Resolve.
	Dir string `yaml:"dir"`
	// MaxBytes bounds events.jsonl; when an event would pass it, the file
	// becomes events.jsonl.1 (replacing the older one) and a new one starts,
	// so the journal holds at most twice this.
	MaxBytes int64 `yaml:"max_bytes"`
}

// MaxMaxBytes bounds journal.max_bytes: the journal (twice this) is read
// whole at every start.
const MaxMaxBytes = 256 << 20

// DefaultConfig returns the state directory left to Resolve and 1 MiB
// (about 3,000 events per file).
func DefaultConfig() Config { return Config{MaxBytes: 1 << 20} }

// Resolve fills an empty Dir: the first path of STATE_DIRECTORY (which
// systemd sets for StateDirectory=), read with getenv, else DefaultDir.
func (c Config) Resolve(getenv func(string) string) Config {
	if c.Dir == "" {
		c.Dir, _, _ = strings.Cut(getenv("STATE_DIRECTORY"), ":")
	}
	if c.Dir == "" {
		c.Dir = DefaultDir
	}
	return c
}

// Validate reports the first invalid field, named by its YAML path.
func (c Config) Validate() error {
	switch {
	case c.Dir != "" && !filepath.IsAbs(c.Dir):
		return fmt.Errorf("%s.dir: must be an absolute path, got %q", ConfigKey, c.Dir)
	case c.MaxBytes < 4096 || c.MaxBytes > MaxMaxBytes:
		return fmt.Errorf("%s.max_bytes: must be between 4096 and %d (256 MiB; the journal is read whole at start), got %d", ConfigKey, MaxMaxBytes, c.MaxBytes)
	}
	return nil
}
