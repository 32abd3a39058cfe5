package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"go.yaml.in/yaml/v3"

	"github.com/clockwatch/clockwatch/internal/safefile"
)

// MaxFileBytes bounds a configuration file: the documented file with every
// key is under 8 KiB, so a larger one is a mistake (a log written over it).
// It also bounds what a reload costs: decoding YAML takes up to about 200
// times the file's size in short-lived memory (a flow list of 64 KiB: 14 MB
// allocated; of 1 MiB: 240 MB, and the daemon's RSS stayed raised after a
// reload).
const MaxFileBytes = 64 << 10

// Load reads and validates the file at path. An empty path means no file:
// the defaults. The file is read through safefile: a FIFO or a device is
// refused without blocking (--config.check and a SIGHUP reload hung on a
// FIFO), links are followed only within the file's directory (a ConfigMap's
// config.yml -> ..data/config.yml), and a file larger than MaxFileBytes is
// refused unread.
func Load(path string) (*Config, error) {
	if path == "" {
		c := Default()
		return &c, nil
	}
	data, err := safefile.Read(safefile.Spec{What: "the configuration file", Limit: MaxFileBytes, Links: safefile.LinksWithinDir}, path)
	if errors.Is(err, safefile.ErrTooLarge) {
		return nil, fmt.Errorf("%s: larger than %d bytes (64 KiB): not a clockwatch configuration (the documented file with every key is under 8 KiB)", path, MaxFileBytes)
	}
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	return Parse(data, path)
}

// Parse decodes and validates a YAML document; name (the file's path) starts
// every error message, followed by the line where known. A file with no
// document (empty, or only comments) is refused: an editor or a full disk
// truncating it must not silently bring back every default (a reload would
// re-enable triggers turned off); a file meant to hold the defaults says {}.
func Parse(data []byte, name string) (*Config, error) {
	c := Default()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: empty (no YAML document): write {} for all the defaults", name)
	} else if err != nil {
		var root yaml.Node
		_ = yaml.Unmarshal(data, &root)
		return nil, yamlError(name, &root, err)
	}
	if err := dec.Decode(new(yaml.Node)); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: more than one YAML document; clockwatch reads one", name)
	}
	c.Step.Interval = c.Clock.SampleInterval
	c.Step.IdleInterval = c.Clock.IdleSampleInterval
	c.perSource()
	if err := c.Validate(); err != nil {
		var root yaml.Node
		_ = yaml.Unmarshal(data, &root) // it decoded above, so it parses
		return nil, locate(name, &root, err)
	}
	c.Sections.Fold()
	return &c, nil
}
