package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/clockwatch/clockwatch/internal/clockbound"
	"github.com/clockwatch/clockwatch/internal/health"
	"github.com/clockwatch/clockwatch/internal/journal"
	"github.com/clockwatch/clockwatch/internal/policy"
	"github.com/clockwatch/clockwatch/internal/safefile"
	"github.com/clockwatch/clockwatch/internal/step"
	"github.com/clockwatch/clockwatch/internal/timesources"
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
	// Stepdown is the socket that tells local lock holders to step down,
	// and the policy that decides when (for every transport).
	Stepdown Stepdown `yaml:"stepdown"`
	// Sections are the time sources' sections (chrony:, ptp:, ...): the
	// registry of sources owns them, their defaults and their validation.
	timesources.Sections `yaml:",inline"`
	// ClockBound is the bounded-time segment applications read.
	ClockBound clockbound.Config `yaml:"clockbound"`
	// Metrics shapes what /metrics serves.
	Metrics Metrics `yaml:"metrics"`
}

// Metrics shapes the exposition, as node_exporter's collector flags do.
type Metrics struct {
	// Detail serves the per-source series (each chrony source's, each ntpd
	// association's), the collectors' scrape durations, every family's
	// HELP text and the histograms' buckets. false leaves them out: a
	// scrape of a host with 8 chrony sources drops from about 43 kB to
	// about 15 kB (docs/metrics.md, "Leaving the detail out"). A reload
	// applies it at the next scrape.
	Detail bool `yaml:"detail"`
}

// Clock configures the local clock sampling.
type Clock struct {
	// SampleInterval is how often the clocks are sampled for step detection
	// while sampling is what detects steps: when the kernel's clock-set
	// notifications are not available, and for a burst after a clock set,
	// a resume or a step.
	SampleInterval time.Duration `yaml:"sample_interval"`
	// IdleSampleInterval is how often they are sampled otherwise, while the
	// clock-set notifications are watched (they wake the sampler at once).
	// 0 turns the idle interval off: always SampleInterval.
	IdleSampleInterval time.Duration `yaml:"idle_sample_interval"`
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
	// Sources replaces the thresholds above for the named sources (ptp4l
	// runs at microseconds). It is not read from the health section:
	// each source's own section sets it (timesources.Judges: ptp.health),
	// copied here by Default and Parse.
	Sources map[string]Health `yaml:"-"`
}

// Thresholds converts the section (and the sources' own thresholds) into
// health's own type.
func (h Health) Thresholds() health.Thresholds {
	t := health.Thresholds{OffsetWarning: h.OffsetWarning, OffsetCritical: h.OffsetCritical,
		ErrorBoundWarning: h.ErrorBoundWarning, ErrorBoundCritical: h.ErrorBoundCritical}
	for name, s := range h.Sources {
		if t.Sources == nil {
			t.Sources = map[string]health.Thresholds{}
		}
		t.Sources[name] = s.Thresholds()
	}
	return t
}

// For returns the thresholds that judge source.
func (h Health) For(source string) Health {
	if t, ok := h.Sources[source]; ok {
		return t
	}
	return h
}

// perSource copies the sources' own thresholds and triggers (those of the
// sections that embed timesources.Judges) to where health and the stepdown
// policy look them up by source name.
func (c *Config) perSource() {
	c.Health.Sources = map[string]Health{}
	c.Stepdown.Policy.Triggers.Sources = map[string]policy.SourceTriggers{}
	for _, j := range c.Sections.Judged() {
		h := j.Health
		c.Health.Sources[j.Name] = Health{OffsetWarning: h.OffsetWarning, OffsetCritical: h.OffsetCritical,
			ErrorBoundWarning: h.ErrorBoundWarning, ErrorBoundCritical: h.ErrorBoundCritical}
		c.Stepdown.Policy.Triggers.Sources[j.Name] = j.Triggers
	}
}

// Default returns the configuration clockwatch runs with when no file is
// given. Every field is set.
func Default() Config {
	st := step.DefaultConfig()
	st.Interval = 100 * time.Millisecond
	dh := health.DefaultThresholds()
	c := Config{
		Step:       st,
		Journal:    journal.DefaultConfig(),
		Stepdown:   DefaultStepdown(),
		Sections:   timesources.DefaultSections(),
		ClockBound: clockbound.DefaultConfig(),
		Metrics:    Metrics{Detail: true},
		Clock:      Clock{SampleInterval: st.Interval, IdleSampleInterval: st.IdleInterval},
		Health: Health{
			OffsetWarning:      dh.OffsetWarning,
			OffsetCritical:     dh.OffsetCritical,
			ErrorBoundWarning:  dh.ErrorBoundWarning,
			ErrorBoundCritical: dh.ErrorBoundCritical,
		},
	}
	c.perSource()
	return c
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
	idle := c.Clock.IdleSampleInterval
	check(idle >= 0 && idle <= time.Minute, "clock.idle_sample_interval",
		"must be between 0 (off) and 1m, got %v", idle)
	h := c.Health
	check(h.OffsetWarning > 0 && h.OffsetWarning <= MaxThreshold, "health.offset_warning", "must be between 1ns and %v, got %v", MaxThreshold, h.OffsetWarning)
	check(h.OffsetCritical <= MaxThreshold, "health.offset_critical", "must be at most %v, got %v", MaxThreshold, h.OffsetCritical)
	check(h.ErrorBoundCritical <= MaxThreshold, "health.error_bound_critical", "must be at most %v, got %v", MaxThreshold, h.ErrorBoundCritical)
	check(h.OffsetCritical >= h.OffsetWarning, "health.offset_critical",
		"must not be below health.offset_warning (%v), got %v", h.OffsetWarning, h.OffsetCritical)
	check(h.ErrorBoundWarning > 0 && h.ErrorBoundWarning <= MaxThreshold, "health.error_bound_warning", "must be between 1ns and %v, got %v", MaxThreshold, h.ErrorBoundWarning)
	check(h.ErrorBoundCritical >= h.ErrorBoundWarning, "health.error_bound_critical",
		"must not be below health.error_bound_warning (%v), got %v", h.ErrorBoundWarning, h.ErrorBoundCritical)
	if si >= time.Millisecond && si <= time.Minute { // else reported above already
		st := c.Step
		st.Interval = si
		if err := st.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, nulBytes(reflect.ValueOf(*c), "")...)
	errs = append(errs, triggerBounds(reflect.ValueOf(c.Stepdown.Policy.Triggers), "stepdown.triggers")...)
	for _, j := range c.Sections.Judged() {
		errs = append(errs, triggerBounds(reflect.ValueOf(j.Triggers), j.Section+".triggers")...)
		errs = append(errs, triggerBounds(reflect.ValueOf(j.Health), j.Section+".health")...)
	}
	if err := c.Journal.Validate(); err != nil {
		errs = append(errs, err)
	}
	for _, v := range []interface{ Validate() error }{c.Stepdown, &c.Sections, c.ClockBound} {
		if err := v.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return firstPerKey(errs)
}

// firstPerKey joins the errors, one a line, keeping only the first of those
// about the same key (a value out of bounds often breaks a rule or two more).
func firstPerKey(errs []error) error {
	var out []error
	seen := map[string]bool{}
	for _, err := range errs {
		for _, line := range strings.Split(err.Error(), "\n") {
			key, _, _ := strings.Cut(line, ":")
			if !seen[key] {
				seen[key] = true
				out = append(out, errors.New(line))
			}
		}
	}
	return errors.Join(out...)
}

// MaxThreshold bounds the health thresholds and the stepdown triggers'
// thresholds and graces: past a day they mean "never".
const MaxThreshold = 24 * time.Hour

// MaxFileBytes bounds a configuration file: the documented file with every
// key is under 8 KiB, so a larger one is a mistake (a log written over it).
// It also bounds what a reload costs: decoding YAML takes up to about 200
// times the file's size in short-lived memory (a flow list of 64 KiB: 14 MB
// allocated; of 1 MiB: 240 MB, and the daemon's RSS stayed raised after a
// reload).
const MaxFileBytes = 64 << 10

// nulBytes reports every string of the configuration (a path, a name, a
// key) that holds a NUL byte: no path can (the kernel stops at it), and the
// daemon would refuse to start on what --config.check accepted.
func nulBytes(v reflect.Value, path string) []error {
	join := func(name string) string {
		if path == "" {
			return name
		}
		return path + "." + name
	}
	switch v.Kind() {
	case reflect.String:
		if strings.IndexByte(v.String(), 0) >= 0 {
			return []error{fmt.Errorf("%s: holds a NUL byte (%q), which no path or name may hold", path, v.String())}
		}
	case reflect.Struct:
		var errs []error
		t := v.Type()
		for i := range t.NumField() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
			if name == "-" || !t.Field(i).IsExported() {
				continue
			}
			if name == "" { // inline
				errs = append(errs, nulBytes(v.Field(i), path)...)
				continue
			}
			errs = append(errs, nulBytes(v.Field(i), join(name))...)
		}
		return errs
	case reflect.Slice, reflect.Array:
		var errs []error
		for i := range v.Len() {
			errs = append(errs, nulBytes(v.Index(i), fmt.Sprintf("%s[%d]", path, i))...)
		}
		return errs
	case reflect.Map:
		var errs []error
		for _, k := range v.MapKeys() {
			p := join(fmt.Sprint(k.Interface()))
			if k.Kind() == reflect.String && strings.IndexByte(k.String(), 0) >= 0 {
				errs = append(errs, fmt.Errorf("%s: the key holds a NUL byte (%q)", path, k.String()))
				continue
			}
			errs = append(errs, nulBytes(v.MapIndex(k), p)...)
		}
		return errs
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return nulBytes(v.Elem(), path)
		}
	}
	return nil
}

// triggerBounds checks every duration under the stepdown triggers, whatever
// the triggers are (the policy owns their list): none negative, none past
// MaxThreshold, enabled or not.
func triggerBounds(v reflect.Value, path string) []error {
	var errs []error
	t := v.Type()
	if t == reflect.TypeOf(time.Duration(0)) {
		if d := time.Duration(v.Int()); d < 0 || d > MaxThreshold {
			errs = append(errs, fmt.Errorf("%s: must be between 0s and %v, got %v", path, MaxThreshold, d))
		}
		return errs
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name == "" || name == "-" || !t.Field(i).IsExported() {
			continue
		}
		errs = append(errs, triggerBounds(v.Field(i), path+"."+name)...)
	}
	return errs
}

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

// yamlError turns the YAML decoder's messages ("yaml: line 3: field x not
// found in type config.Clock") into "name:3: unknown key x", one problem a
// line.
func yamlError(name string, root *yaml.Node, err error) error {
	msgs := []string{err.Error()}
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	}
	for i, m := range msgs {
		m = strings.TrimPrefix(m, "yaml: ")
		loc, key := name, ""
		if rest, ok := strings.CutPrefix(m, "line "); ok {
			if n, text, ok := strings.Cut(rest, ": "); ok {
				loc, m = name+":"+n, text
				if line, err := strconv.Atoi(n); err == nil {
					key = keyAt(root, line)
				}
			}
		}
		msgs[i] = loc + ": " + friendlier(m, key)
	}
	return errors.New(strings.Join(msgs, "\n"))
}

// friendlier rewords the decoder's type errors for someone editing YAML; key
// is the dotted path of the value on the error's line, "" when unknown.
func friendlier(m, key string) string {
	if rest, ok := strings.CutPrefix(m, "field "); ok {
		if name, _, ok := strings.Cut(rest, " not found in type "); ok {
			return unknownKey(name, key)
		}
	}
	if strings.HasPrefix(m, "cannot unmarshal !!seq into config.Config") ||
		strings.HasPrefix(m, "cannot unmarshal !!str") && strings.HasSuffix(m, "into config.Config") {
		return "the file must be a mapping of keys such as clock: and health:"
	}
	// "cannot unmarshal !!str `many` into int": name the key, the type
	// wanted and an example, not Go's types.
	if rest, ok := strings.CutPrefix(m, "cannot unmarshal "); ok {
		if what, into, ok := strings.Cut(rest, " into "); ok {
			_, val, _ := strings.Cut(what, " ")
			if val == "" {
				val = "a " + strings.TrimPrefix(what, "!!") // !!map, !!seq
			}
			want, example := expected(into)
			if key != "" {
				return fmt.Sprintf("%s: %s is not %s (write it like %s)", key, val, want, example)
			}
			return fmt.Sprintf("%s is not %s (write it like %s)", val, want, example)
		}
	}
	return m
}

// expected names a Go type for someone editing YAML, with an example.
func expected(goType string) (what, example string) {
	switch {
	case goType == "time.Duration":
		return "a duration", "100ms, 2s or 1m30s"
	case goType == "bool":
		return "true or false", "true"
	case goType == "float64" || goType == "float32":
		return "a number", "0.0005"
	case strings.HasPrefix(goType, "uint"):
		return "a whole number, 0 or more", "1000"
	case strings.HasPrefix(goType, "int"):
		return "a whole number", "4096"
	case goType == "string":
		return "a string", `"/run/clockwatch/stepdown.sock"`
	case strings.HasPrefix(goType, "[]"):
		return "a list", "[1000, 1001]"
	default:
		return "a mapping of keys", "{enabled: true}"
	}
}

// keyAt returns the dotted path of the value that starts on line, "" when
// none does.
func keyAt(n *yaml.Node, line int) string {
	if n == nil {
		return ""
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if v.Line == line && v.Kind == yaml.ScalarNode || k.Line == line && v.Kind != yaml.ScalarNode && v.Line != line {
				return k.Value
			}
			if sub := keyAt(v, line); sub != "" {
				if strings.HasPrefix(sub, "[") {
					return k.Value + sub
				}
				return k.Value + "." + sub
			}
			if v.Line == line {
				return k.Value
			}
		}
	case yaml.SequenceNode:
		for i, v := range n.Content {
			if v.Line == line && v.Kind == yaml.ScalarNode {
				return fmt.Sprintf("[%d]", i)
			}
			if sub := keyAt(v, line); sub != "" {
				return fmt.Sprintf("[%d].%s", i, sub)
			}
		}
	}
	return ""
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
