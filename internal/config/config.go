package config

import (
	"time"

	"github.com/clockwatch/clockwatch/internal/clockbound"
	"github.com/clockwatch/clockwatch/internal/health"
	"github.com/clockwatch/clockwatch/internal/journal"
	"github.com/clockwatch/clockwatch/internal/policy"
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
