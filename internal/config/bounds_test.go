package config

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// numericKeys lists every numeric setting under v by its YAML path.
func numericKeys(v reflect.Value, path string, fn func(path string, v reflect.Value)) {
	t := v.Type()
	switch {
	case t == reflect.TypeOf(time.Duration(0)):
		fn(path, v)
	case t.Kind() == reflect.Struct:
		for i := range t.NumField() {
			name, opts, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
			if name == "" && opts == "inline" {
				numericKeys(v.Field(i), path, fn) // an embedded section's keys are the section's own
				continue
			}
			if name == "" || name == "-" {
				continue
			}
			p := name
			if path != "" {
				p = path + "." + name
			}
			numericKeys(v.Field(i), p, fn)
		}
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64, t.Kind() == reflect.Float64:
		fn(path, v)
	}
}

// The config bounds table, enumerated from the configuration itself: every
// numeric key refuses an absurdly large and an absurdly small value, with an
// error that names the key, so --config.check catches what would kill or
// stall the daemon (a 2e9 queue, a 1ns heartbeat). A key added without
// bounds fails here.
func TestEveryNumericKeyIsBounded(t *testing.T) {
	t.Parallel()
	def := Default()
	n := 0
	numericKeys(reflect.ValueOf(&def).Elem(), "", func(path string, _ reflect.Value) {
		n++
		var extremes []any
		switch {
		case strings.HasSuffix(path, "max_slew_rate"), path == "peers.rate_limit":
			extremes = []any{1e300, -1.0, math.NaN(), math.Inf(1)}
		case path == "ntp_probes.samples":
			extremes = []any{int64(1 << 40), int64(-1)}
		}
		for _, x := range extremes {
			checkRefused(t, path, x)
		}
		if extremes != nil {
			return
		}
		// Durations and integers: far past any sane bound, and negative.
		checkRefused(t, path, int64(100*365*24*time.Hour))
		checkRefused(t, path, int64(-1))
	})
	if n < 30 {
		t.Errorf("only %d numeric keys found", n)
	}
	t.Logf("%d numeric keys, each refusing its extremes", n)
}

func checkRefused(t *testing.T, path string, x any) {
	t.Helper()
	c := Default()
	var field reflect.Value
	numericKeys(reflect.ValueOf(&c).Elem(), "", func(p string, v reflect.Value) {
		if p == path {
			field = v
		}
	})
	switch x := x.(type) {
	case float64:
		field.SetFloat(x)
	case int64:
		field.SetInt(x)
	}
	if path == "clock.sample_interval" {
		c.Step.Interval = c.Clock.SampleInterval
	}
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), path+":") {
		t.Errorf("%s = %v: Validate() = %v, want an error naming %s", path, x, err, path)
	}
}

// The intervals of loops have a lower bound: a tiny one burns a core.
func TestLoopIntervalsHaveAFloor(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"clock.sample_interval", "stepdown.heartbeat", "chrony.poll_interval",
		"ntpd.poll_interval", "ntp_probes.interval"} {
		checkRefused(t, path, int64(time.Nanosecond))
	}
}

func TestLoadRefusesAHugeFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "huge.yml")
	if err := os.WriteFile(path, []byte("# "+strings.Repeat("x", 50<<20)+"\n{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if want := path + ": larger than 1048576 bytes (1 MiB): not a clockwatch configuration"; err == nil || err.Error() != want {
		t.Errorf("Load() = %v, want %s", err, want)
	}
}
