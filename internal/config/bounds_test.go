package config

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"syscall"
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
	if want := path + ": larger than 65536 bytes (64 KiB): not a clockwatch configuration (the documented file with every key is under 8 KiB)"; err == nil || err.Error() != want {
		t.Errorf("Load() = %v, want %s", err, want)
	}
}

// flowList is a valid configuration of about n bytes that is one long flow
// list (the costliest YAML to decode per byte, found by trying: block lists
// cost a third of it).
func flowList(n int) []byte {
	var b strings.Builder
	b.WriteString("stepdown: {allow_uids: [")
	for b.Len() < n-8 {
		b.WriteString("1,")
	}
	b.WriteString("1]}\n")
	return []byte(b.String())
}

// TestHugeReloadIsBounded: a 1 MiB configuration of list entries was read
// and decoded, and a reload raised the daemon's RSS from 18.7 to 123.5 MB
// (issue 32, item 6). It is refused unread now, and the largest file
// accepted costs a bounded amount of memory to decode.
func TestHugeReloadIsBounded(t *testing.T) { // not parallel: it measures allocation
	path := filepath.Join(t.TempDir(), "list.yml")
	if err := os.WriteFile(path, flowList(1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "larger than 65536 bytes") {
		t.Errorf("a 1 MiB list: Load() = %v, want it refused", err)
	}
	worst := flowList(MaxFileBytes)
	if err := os.WriteFile(path, worst, 0o600); err != nil {
		t.Fatal(err)
	}
	// Total allocation, not the heap: it bounds the peak whatever the GC
	// does, and other tests running in parallel only add to it.
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := Load(path); err != nil {
		t.Fatalf("the largest accepted file: %v", err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
		t.Errorf("decoding the largest accepted file (%d bytes) allocated %d MiB, want under 64 MiB", len(worst), got>>20)
	}
}

// TestOpenRefusesConfigFIFO: a FIFO as the configuration hung --config.check
// and a SIGHUP reload (after which SIGTERM no longer ended the daemon); a
// link to a file outside the configuration's directory was followed. Both
// are refused at once, naming the file (issue 32, items 3 and 6).
func TestOpenRefusesConfigFIFO(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "elsewhere.yml")
	if err := os.WriteFile(outside, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	escape := filepath.Join(dir, "escape.yml")
	if err := os.Symlink(outside, escape); err != nil {
		t.Fatal(err)
	}
	// A ConfigMap volume: config.yml -> ..data/config.yml.
	if err := os.MkdirAll(filepath.Join(dir, "..2026_12_04"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "..2026_12_04", "config.yml"), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..2026_12_04", filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	configMap := filepath.Join(dir, "config.yml")
	if err := os.Symlink("..data/config.yml", configMap); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{fifo, "the configuration file " + fifo + " is a FIFO, not a regular file"},
		{escape, "the configuration file " + escape + " is a symbolic link to " + outside + ", outside " + dir},
		{"/dev/zero", "the configuration file /dev/zero is a device, not a regular file"},
		{configMap, ""},
	} {
		done := make(chan error, 1)
		go func() { _, err := Load(tc.path); done <- err }()
		select {
		case err := <-done:
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Load(%s) = %v, want %q", tc.path, err, tc.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Load(%s) blocked", tc.path)
		}
	}
}
