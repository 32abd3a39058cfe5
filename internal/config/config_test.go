package config

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func TestDefaultIsValid(t *testing.T) {
	t.Parallel()
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
}

func TestLoadNoFileGivesDefaults(t *testing.T) {
	t.Parallel()
	c, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Default(), *c); diff != "" {
		t.Errorf("Load(\"\") mismatch (-want +got):\n%s", diff)
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		yaml string
		want func(*Config)
	}{
		{"explicitly the defaults", "{}\n", func(*Config) {}},
		{"comments and the defaults", "# nothing set\n{}\n", func(*Config) {}},
		{"partial section keeps other defaults", "health:\n  offset_critical: 2s\n",
			func(c *Config) { c.Health.OffsetCritical = 2 * time.Second }},
		{"sample interval", "clock:\n  sample_interval: 250ms\n",
			func(c *Config) {
				c.Clock.SampleInterval = 250 * time.Millisecond
				c.Step.Interval = 250 * time.Millisecond
			}},
		{"step detection", "step:\n  max_slew_rate: 0.083333\n  min_step: 50us\njournal:\n  dir: /srv/clockwatch\n",
			func(c *Config) {
				c.Step.MaxSlewRate = 0.083333
				c.Step.MinStep = 50 * time.Microsecond
				c.Journal.Dir = "/srv/clockwatch"
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			want := Default()
			tt.want(&want)
			got, err := Parse([]byte(tt.yaml), "test.yml")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, *got); diff != "" {
				t.Errorf("Parse() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// Every file in testdata/bad must fail with exactly the message in its
// .err golden file: the file name, the line and the key that is wrong.
func TestBadConfigs(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/bad/*.yml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no bad configs found: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			_, err := Load(f)
			if err == nil {
				t.Fatal("Load() succeeded, want an error")
			}
			golden := strings.TrimSuffix(f, ".yml") + ".err"
			if *update {
				if err := os.WriteFile(golden, []byte(err.Error()+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, rerr := os.ReadFile(golden)
			if rerr != nil {
				t.Fatalf("%v (run with -update to create it)", rerr)
			}
			if diff := cmp.Diff(strings.TrimSpace(string(want)), err.Error()); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	t.Parallel()
	_, err := Load("testdata/does-not-exist.yml")
	if err == nil || !strings.Contains(err.Error(), "testdata/does-not-exist.yml") {
		t.Fatalf("Load() = %v, want an error naming the file", err)
	}
}

// The example shipped in the packages must load and must set every key to
// its default, so it documents the defaults truthfully.
func TestExampleConfig(t *testing.T) {
	t.Parallel()
	c, err := Load("../../packaging/clockwatch.yml")
	if err != nil {
		t.Fatal(err)
	}
	// An empty list written as [] is the same default as none.
	if diff := cmp.Diff(Default(), *c, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("packaging/clockwatch.yml differs from the defaults (-want +got):\n%s", diff)
	}
}

// The example documents every key: each key of the defaults appears in it.
func TestExampleConfigListsEveryKey(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../packaging/clockwatch.yml")
	if err != nil {
		t.Fatal(err)
	}
	var example, defaults yaml.Node
	if err := yaml.Unmarshal(data, &example); err != nil {
		t.Fatal(err)
	}
	if err := defaults.Encode(Default()); err != nil {
		t.Fatal(err)
	}
	have := keyPaths(&example, "")
	for _, k := range keyPaths(&defaults, "") {
		if !slices.Contains(have, k) {
			t.Errorf("packaging/clockwatch.yml does not document %s", k)
		}
	}
}

func keyPaths(n *yaml.Node, prefix string) []string {
	if n.Kind == yaml.DocumentNode {
		return keyPaths(n.Content[0], prefix)
	}
	var out []string
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := prefix + n.Content[i].Value
		out = append(out, k)
		out = append(out, keyPaths(n.Content[i+1], k+".")...)
	}
	return out
}
