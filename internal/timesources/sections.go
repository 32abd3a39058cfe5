package timesources

import (
	"errors"
	"fmt"
	"time"

	"github.com/clockwatch/clockwatch/internal/policy"
	"github.com/clockwatch/clockwatch/internal/probe/ptp"
)

// SourceSections returns s: the configuration, which embeds Sections,
// hands its sections to Build, Status and a Switch this way.
func (s *Sections) SourceSections() *Sections { return s }

// Sectioned is what holds the sources' sections: the configuration.
type Sectioned interface{ SourceSections() *Sections }

// DefaultSections returns every source's section as it is when the file
// says nothing.
func DefaultSections() Sections { return defaultSections(Registry()) }

func defaultSections(regs []Registration) Sections {
	var s Sections
	for _, reg := range regs {
		if reg.defaults != nil {
			reg.defaults(&s)
		}
	}
	return s
}

// Validate reports every problem of every section, each naming its key.
func (s *Sections) Validate() error { return s.validate(Registry()) }

func (s *Sections) validate(regs []Registration) error {
	var errs []error
	for _, reg := range regs {
		if reg.section != nil {
			errs = append(errs, reg.section(s).Validate())
		}
	}
	return errors.Join(errs...)
}

// Fold folds the older spellings of every section into the newer (enabled
// into mode: timesource.Common.Fold), once the sections are valid, so that
// a file that says `enabled: true` is the configuration of one that does
// not, and a reload sees no change between them.
func (s *Sections) Fold() { s.fold(Registry()) }

func (s *Sections) fold(regs []Registration) {
	for _, reg := range regs {
		if reg.fold != nil {
			reg.fold(s)
		}
	}
}

// Judged are the sources whose sections carry their own thresholds, in
// the registry's order.
func (s *Sections) Judged() []Judged { return s.judged(Registry()) }

func (s *Sections) judged(regs []Registration) []Judged {
	var out []Judged
	for _, reg := range regs {
		if reg.judges != nil {
			out = append(out, Judged{Name: reg.Name, Section: reg.Section, Judges: *reg.judges(s)})
		}
	}
	return out
}

// Judged is one source's own thresholds: its name, as the judges look it up,
// and its section's YAML key.
type Judged struct {
	Name, Section string
	Judges
}

// Reloadable reports whether path is one of a source's own thresholds
// (section.triggers.*, section.health.*), which a reload applies at once
// as it does stepdown.triggers and health.
func Reloadable(path string) bool { return reloadable(Registry(), path) }

func reloadable(regs []Registration, path string) bool {
	for _, reg := range regs {
		if reg.judges == nil {
			continue
		}
		for _, key := range []string{".triggers.", ".health."} {
			if len(path) > len(reg.Section+key) && path[:len(reg.Section+key)] == reg.Section+key {
				return true
			}
		}
	}
	return false
}

// Judges is the block a source's section embeds, inline, when its scale is
// not NTP's (ptp4l: microseconds): the stepdown triggers and health
// thresholds that judge it in place of stepdown.triggers' and health's. The
// configuration copies them to the per-source maps the judges look up by
// source name (policy.Triggers.Sources, health's Sources); the source's own
// package does not depend on its judges.
type Judges struct {
	Triggers policy.SourceTriggers `yaml:"triggers"`
	Health   Health                `yaml:"health"`
}

// OwnJudges returns j: a section that embeds Judges has its own thresholds.
func (j *Judges) OwnJudges() *Judges { return j }

// Health is a source's own health thresholds (health's keys).
type Health struct {
	OffsetWarning      time.Duration `yaml:"offset_warning"`
	OffsetCritical     time.Duration `yaml:"offset_critical"`
	ErrorBoundWarning  time.Duration `yaml:"error_bound_warning"`
	ErrorBoundCritical time.Duration `yaml:"error_bound_critical"`
}

// Validate reports every problem of the thresholds of the section named
// section.
func (j Judges) Validate(section string) error {
	errs := []error{j.Triggers.Validate(section + ".triggers")}
	h := j.Health
	if h.OffsetWarning <= 0 {
		errs = append(errs, fmt.Errorf("%s.health.offset_warning: must be positive, got %s", section, h.OffsetWarning))
	}
	if h.OffsetCritical < h.OffsetWarning {
		errs = append(errs, fmt.Errorf("%[1]s.health.offset_critical: must not be below %[1]s.health.offset_warning (%[2]s), got %[3]s", section, h.OffsetWarning, h.OffsetCritical))
	}
	if h.ErrorBoundWarning <= 0 {
		errs = append(errs, fmt.Errorf("%s.health.error_bound_warning: must be positive, got %s", section, h.ErrorBoundWarning))
	}
	if h.ErrorBoundCritical < h.ErrorBoundWarning {
		errs = append(errs, fmt.Errorf("%[1]s.health.error_bound_critical: must not be below %[1]s.health.error_bound_warning (%[2]s), got %[3]s", section, h.ErrorBoundWarning, h.ErrorBoundCritical))
	}
	return errors.Join(errs...)
}

// PTP is the `ptp:` section: the poller's settings (package ptp's, inline)
// and ptp4l's own thresholds (Judges): PTP holds the clock within
// nanoseconds (hardware timestamps) to tens of microseconds (software
// ones), so stepdown.triggers' 1 s offset and 60 s unsynchronized suit it
// no more than health's 100 ms.
type PTP struct {
	ptp.Config `yaml:",inline"`
	Judges     `yaml:",inline"`
}

// DefaultPTP is the section when the file says nothing: an offset over
// 100 µs means the servo has lost its lock; an error bound (|offset| + mean
// path delay + the grandmaster's accuracy) over 1 ms; the port not SLAVE
// (nor MASTER as a synchronised grandmaster) for over 10 s (ptp4l takes a
// few announce intervals to choose a master; longer is a lost master).
// Health warns from 10 µs of offset (software timestamps hold a quiet host
// within a few µs), critical from the trigger's 100 µs; the error bound
// warns from 100 µs, critical from the trigger's 1 ms.
func DefaultPTP() PTP {
	return PTP{Config: ptp.DefaultConfig(), Judges: Judges{
		Triggers: policy.SourceTriggers{
			Offset:         policy.Threshold{Enabled: true, Threshold: 100 * time.Microsecond},
			ErrorBound:     policy.Threshold{Enabled: true, Threshold: time.Millisecond},
			Unsynchronized: policy.Grace{Enabled: true, Grace: 10 * time.Second},
		},
		Health: Health{OffsetWarning: 10 * time.Microsecond, OffsetCritical: 100 * time.Microsecond,
			ErrorBoundWarning: 100 * time.Microsecond, ErrorBoundCritical: time.Millisecond},
	}}
}

// Validate reports every problem, naming each field by its YAML path under
// `ptp:`: the poller's settings, then the judges'.
func (c PTP) Validate() error { return errors.Join(c.Config.Validate(), c.Judges.Validate("ptp")) }
