package config

import (
	"errors"
	"fmt"
	"time"

	"github.com/clockwatch/clockwatch/internal/probe/ptp"
	"github.com/clockwatch/clockwatch/internal/stepdown/policy"
)

// PTP is the `ptp:` section: the poller's settings (package ptp's, inline)
// and the judges' thresholds for ptp4l, which the configuration converts
// into the policy's and health's own types (perSource): the probe does not
// depend on its judges.
type PTP struct {
	ptp.Config `yaml:",inline"`
	// Triggers judge ptp4l in place of stepdown.triggers' offset,
	// error_bound and unsynchronized (whose 1 s and 60 s suit NTP): PTP
	// holds the clock within nanoseconds (hardware timestamps) to tens of
	// microseconds (software ones), so an offset over 100 µs means the
	// servo has lost its lock. Unsynchronized is the port not SLAVE (nor
	// MASTER as a synchronised grandmaster).
	Triggers policy.SourceTriggers `yaml:"triggers"`
	// Health holds the thresholds `clockwatch status` judges ptp4l by, in
	// place of health's.
	Health PTPHealth `yaml:"health"`
}

// PTPHealth is the `ptp.health:` section: health's thresholds for ptp4l.
type PTPHealth struct {
	OffsetWarning      time.Duration `yaml:"offset_warning"`
	OffsetCritical     time.Duration `yaml:"offset_critical"`
	ErrorBoundWarning  time.Duration `yaml:"error_bound_warning"`
	ErrorBoundCritical time.Duration `yaml:"error_bound_critical"`
}

// DefaultPTPTriggers are ptp4l's triggers unless configured: an offset over
// 100 µs, an error bound (|offset| + mean path delay + the grandmaster's
// accuracy) over 1 ms, the port not SLAVE for over 10 s (ptp4l takes a few
// announce intervals to choose a master; longer is a lost master).
func DefaultPTPTriggers() policy.SourceTriggers {
	return policy.SourceTriggers{
		Offset:         policy.Threshold{Enabled: true, Threshold: 100 * time.Microsecond},
		ErrorBound:     policy.Threshold{Enabled: true, Threshold: time.Millisecond},
		Unsynchronized: policy.Grace{Enabled: true, Grace: 10 * time.Second},
	}
}

// DefaultPTPHealth are ptp4l's health thresholds unless configured: a
// warning from 10 µs of offset (software timestamps hold a quiet host within
// a few µs), critical from the offset trigger's 100 µs; the error bound warns
// from 100 µs, critical from the trigger's 1 ms.
func DefaultPTPHealth() PTPHealth {
	return PTPHealth{OffsetWarning: 10 * time.Microsecond, OffsetCritical: 100 * time.Microsecond,
		ErrorBoundWarning: 100 * time.Microsecond, ErrorBoundCritical: time.Millisecond}
}

// DefaultPTP is the section when the file says nothing.
func DefaultPTP() PTP {
	return PTP{Config: ptp.DefaultConfig(), Triggers: DefaultPTPTriggers(), Health: DefaultPTPHealth()}
}

// Validate reports every problem, naming each field by its YAML path under
// `ptp:`: the poller's settings, then the judges'.
func (c PTP) Validate() error {
	errs := []error{c.Config.Validate(), c.Triggers.Validate("ptp.triggers")}
	h := c.Health
	if h.OffsetWarning <= 0 {
		errs = append(errs, fmt.Errorf("ptp.health.offset_warning: must be positive, got %s", h.OffsetWarning))
	}
	if h.OffsetCritical < h.OffsetWarning {
		errs = append(errs, fmt.Errorf("ptp.health.offset_critical: must not be below ptp.health.offset_warning (%s), got %s", h.OffsetWarning, h.OffsetCritical))
	}
	if h.ErrorBoundWarning <= 0 {
		errs = append(errs, fmt.Errorf("ptp.health.error_bound_warning: must be positive, got %s", h.ErrorBoundWarning))
	}
	if h.ErrorBoundCritical < h.ErrorBoundWarning {
		errs = append(errs, fmt.Errorf("ptp.health.error_bound_critical: must not be below ptp.health.error_bound_warning (%s), got %s", h.ErrorBoundWarning, h.ErrorBoundCritical))
	}
	return errors.Join(errs...)
}
