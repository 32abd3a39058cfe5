package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/clockwatch/clockwatch/journal"
	"github.com/clockwatch/clockwatch/probe/chrony"
	"github.com/clockwatch/clockwatch/probe/ntpd"
	"github.com/clockwatch/clockwatch/probe/sntp"
	"github.com/clockwatch/clockwatch/probe/timesyncd"
	"github.com/clockwatch/clockwatch/step"
	"github.com/clockwatch/clockwatch/stepdown/server"
)

// Config is everything clockwatch's behaviour depends on.
type Config struct {
	Clock  Clock  `yaml:"clock"`
	Health Health `yaml:"health"`
	// Step tunes step detection; its sampling interval is
	// clock.sample_interval (copied into Step.Interval by Default and Parse).
	Step step.Config `yaml:"step"`
	// Journal says where step events and the clock epoch are kept.
	Journal journal.Config `yaml:"journal"`
	// Stepdown is the socket that tells local lock holders to step down.
	Stepdown server.Config `yaml:"stepdown"`
	// Chrony, Ntpd and NTPProbes are the time daemons polled and the
	// independent NTP servers queried.
	Chrony    chrony.Config `yaml:"chrony"`
	Ntpd      ntpd.Config   `yaml:"ntpd"`
	NTPProbes sntp.Config   `yaml:"ntp_probes"`
	// Timesyncd is systemd-timesyncd, read over D-Bus.
	Timesyncd timesyncd.Config `yaml:"timesyncd"`
}

// Clock configures the local clock sampling.
type Clock struct {
	// SampleInterval is how often the clocks are sampled for step detection
	// and the clock gauges.
	SampleInterval time.Duration `yaml:"sample_interval"`
}

// Health holds the thresholds `clockwatch status` and the systemd STATUS line
// judge the clock by.
type Health struct {
	// OffsetWarning and OffsetCritical bound the clock's offset from true
	// time (as the time daemon estimates it).
	OffsetWarning  time.Duration `yaml:"offset_warning"`
	OffsetCritical time.Duration `yaml:"offset_critical"`
	// ErrorBoundWarning and ErrorBoundCritical bound the worst case error:
	// the kernel's maxerror, or chrony's |offset| + dispersion + delay/2.
	ErrorBoundWarning  time.Duration `yaml:"error_bound_warning"`
	ErrorBoundCritical time.Duration `yaml:"error_bound_critical"`
}

// Default returns the configuration clockwatch runs with when no file is
// given. Every field is set.
func Default() Config {
	st := step.DefaultConfig()
	st.Interval = 100 * time.Millisecond
	return Config{
		Step:      st,
		Journal:   journal.DefaultConfig(),
		Stepdown:  server.DefaultConfig(),
		Chrony:    chrony.DefaultConfig(),
		Ntpd:      ntpd.DefaultConfig(),
		NTPProbes: sntp.DefaultConfig(),
		Timesyncd: timesyncd.DefaultConfig(),
		Clock:     Clock{SampleInterval: st.Interval},
		Health: Health{
			OffsetWarning:      100 * time.Millisecond,
			OffsetCritical:     500 * time.Millisecond,
			ErrorBoundWarning:  250 * time.Millisecond,
			ErrorBoundCritical: time.Second,
		},
	}
}

// Validate checks every field. Each problem is reported as "key.path: what
// is wrong", all problems at once.
func (c *Config) Validate() error {
	var errs []error
	check := func(ok bool, path, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf("%s: "+format, append([]any{path}, args...)...))
		}
	}
	si := c.Clock.SampleInterval
	check(si >= time.Millisecond && si <= time.Minute, "clock.sample_interval",
		"must be between 1ms and 1m, got %v", si)
	h := c.Health
	check(h.OffsetWarning > 0, "health.offset_warning", "must be positive, got %v", h.OffsetWarning)
	check(h.OffsetCritical >= h.OffsetWarning, "health.offset_critical",
		"must not be below health.offset_warning (%v), got %v", h.OffsetWarning, h.OffsetCritical)
	check(h.ErrorBoundWarning > 0, "health.error_bound_warning", "must be positive, got %v", h.ErrorBoundWarning)
	check(h.ErrorBoundCritical >= h.ErrorBoundWarning, "health.error_bound_critical",
		"must not be below health.error_bound_warning (%v), got %v", h.ErrorBoundWarning, h.ErrorBoundCritical)
	if si >= time.Millisecond && si <= time.Minute { // else reported above already
		st := c.Step
		st.Interval = si
		if err := st.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := c.Journal.Validate(); err != nil {
		errs = append(errs, err)
	}
	for _, v := range []interface{ Validate() error }{c.Stepdown, c.Chrony, c.Ntpd, c.NTPProbes, c.Timesyncd} {
		if err := v.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Load reads and validates the file at path. An empty path means no file:
// the defaults.
func Load(path string) (*Config, error) {
	if path == "" {
		c := Default()
		return &c, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	return Parse(data, path)
}

// Parse decodes and validates a YAML document; name (the file's path) starts
// every error message, followed by the line where known.
func Parse(data []byte, name string) (*Config, error) {
	c := Default()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return nil, yamlError(name, err)
	}
	if err := dec.Decode(new(yaml.Node)); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: more than one YAML document; clockwatch reads one", name)
	}
	c.Step.Interval = c.Clock.SampleInterval
	if err := c.Validate(); err != nil {
		var root yaml.Node
		_ = yaml.Unmarshal(data, &root) // it decoded above, so it parses
		return nil, locate(name, &root, err)
	}
	return &c, nil
}

// yamlError turns the YAML decoder's messages ("yaml: line 3: field x not
// found in type config.Clock") into "name:3: unknown key x", one problem a
// line.
func yamlError(name string, err error) error {
	msgs := []string{err.Error()}
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	}
	for i, m := range msgs {
		m = strings.TrimPrefix(m, "yaml: ")
		loc := name
		if rest, ok := strings.CutPrefix(m, "line "); ok {
			if n, text, ok := strings.Cut(rest, ": "); ok {
				loc, m = name+":"+n, text
			}
		}
		msgs[i] = loc + ": " + friendlier(m)
	}
	return errors.New(strings.Join(msgs, "\n"))
}

// friendlier rewords the decoder's type errors for someone editing YAML.
func friendlier(m string) string {
	if rest, ok := strings.CutPrefix(m, "field "); ok {
		if key, typ, ok := strings.Cut(rest, " not found in type "); ok {
			return fmt.Sprintf("unknown key %q (in %s; keys are case-sensitive)", key, typ)
		}
	}
	if rest, ok := strings.CutPrefix(m, "cannot unmarshal !!str "); ok {
		if val, ok := strings.CutSuffix(rest, " into time.Duration"); ok {
			return val + " is not a duration (write it like 100ms, 2s or 1m30s)"
		}
	}
	if strings.HasPrefix(m, "cannot unmarshal !!seq into config.Config") ||
		strings.HasPrefix(m, "cannot unmarshal !!str") && strings.HasSuffix(m, "into config.Config") {
		return "the file must be a mapping of keys such as clock: and health:"
	}
	return m
}

// locate prefixes each "key.path: ..." validation error with the file name
// and the line of that key, one error per line.
func locate(name string, root *yaml.Node, err error) error {
	var lines []string
	for _, msg := range strings.Split(err.Error(), "\n") {
		path, _, _ := strings.Cut(msg, ":")
		if line := lineOf(root, path); line > 0 {
			lines = append(lines, fmt.Sprintf("%s:%d: %s", name, line, msg))
		} else {
			lines = append(lines, fmt.Sprintf("%s: %s", name, msg))
		}
	}
	return errors.New(strings.Join(lines, "\n"))
}

// lineOf finds the line of a dotted key path such as "chrony.servers[1]";
// 0 when the key is not in the document (a default failed validation).
func lineOf(root *yaml.Node, path string) int {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 0
	for _, part := range strings.Split(path, ".") {
		idx := -1
		if key, rest, ok := strings.Cut(part, "["); ok {
			if i, err := strconv.Atoi(strings.TrimSuffix(rest, "]")); err == nil {
				part, idx = key, i
			}
		}
		next := mappingValue(n, part)
		if next == nil {
			return line
		}
		line, n = next.Line, next
		if idx >= 0 {
			if n.Kind != yaml.SequenceNode || idx >= len(n.Content) {
				return line
			}
			n = n.Content[idx]
			line = n.Line
		}
	}
	return line
}

func mappingValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
