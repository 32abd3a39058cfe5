package config

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"
)

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
