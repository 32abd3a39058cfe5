package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// The example as packaging/clockwatch.yml shipped it before the sources'
// sections shared mode (chrony, ntpd and ptp said enabled: true) still
// reads as the defaults: a file users have keeps working, and a reload
// from it to the new spelling changes nothing.
func TestOlderExampleIsTheDefaults(t *testing.T) {
	t.Parallel()
	c, err := Load("testdata/older-example.yml")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Default(), *c, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("testdata/older-example.yml differs from the defaults (-want +got):\n%s", diff)
	}
	now, err := Load("../../packaging/clockwatch.yml")
	if err != nil {
		t.Fatal(err)
	}
	if got := Changed(c, now); len(got) != 0 {
		t.Errorf("Changed(older example, example) = %v, want nothing", got)
	}
}

// enabled, the older spelling of mode, and mode switch a source the same
// way; the two contradicting each other is an error that names both.
func TestSourceSwitchSpellings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		yaml    string
		on      func(*Config) bool
		want    bool
		wantErr string
	}{
		{yaml: "chrony:\n  enabled: true\n", on: func(c *Config) bool { return c.Chrony.On() }, want: true},
		{yaml: "chrony:\n  enabled: false\n", on: func(c *Config) bool { return c.Chrony.On() }, want: false},
		{yaml: "chrony:\n  mode: off\n", on: func(c *Config) bool { return c.Chrony.On() }, want: false},
		{yaml: "ntpd:\n  enabled: false\n", on: func(c *Config) bool { return c.Ntpd.On() }, want: false},
		{yaml: "ntpd:\n  enabled: true\n  mode: on\n", on: func(c *Config) bool { return c.Ntpd.Pinned() }, want: true},
		{yaml: "ptp:\n  enabled: false\n", on: func(c *Config) bool { return c.PTP.On() }, want: false},
		{yaml: "timesyncd:\n  enabled: false\n", on: func(c *Config) bool { return c.Timesyncd.On() }, want: false},
		{yaml: "vmclock:\n  mode: off\n", on: func(c *Config) bool { return c.VMClock.On() }, want: false},
		{yaml: "ptp:\n  enabled: false\n  mode: on\n", wantErr: "t.yml:2: ptp.enabled: false contradicts ptp.mode: on (enabled is the older spelling of mode: give one of them)"},
		{yaml: "chrony:\n  enabled: true\n  mode: off\n", wantErr: "t.yml:2: chrony.enabled: true contradicts chrony.mode: off"},
		{yaml: "vmclock:\n  timeout: 1s\n", wantErr: "t.yml:2: vmclock.timeout: must be 0: a poll of vmclock does not wait, got 1s"},
		{yaml: "ptp:\n  role: boss\n", wantErr: `t.yml:2: ptp.role: must be "authoritative" or "second_opinion", got "boss"`},
	} {
		c, err := Parse([]byte(tc.yaml), "t.yml")
		if tc.wantErr != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
				t.Errorf("%q: err = %v, want %q", tc.yaml, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.yaml, err)
			continue
		}
		if got := tc.on(c); got != tc.want {
			t.Errorf("%q: on = %v, want %v", tc.yaml, got, tc.want)
		}
		if c.Chrony.Enabled != nil || c.Ntpd.Enabled != nil || c.PTP.Enabled != nil || c.Timesyncd.Enabled != nil {
			t.Errorf("%q: enabled not folded into mode", tc.yaml)
		}
	}
}
