package alerts

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// exampleRE finds a docs example: a marker comment, then a fenced YAML block.
var exampleRE = regexp.MustCompile("(?s)<!-- prometheus-example:([a-z_]+) -->\n```yaml\n(.*?)```")

// TestScrapeConfigExamples checks the Prometheus scrape_configs examples of
// docs/install.md (static and file_sd, with the instance relabelling) with
// promtool, as a user would paste them.
func TestScrapeConfigExamples(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/install.md")
	if err != nil {
		t.Fatal(err)
	}
	examples := map[string]string{}
	for _, m := range exampleRE.FindAllStringSubmatch(string(doc), -1) {
		examples[m[1]] = m[2]
	}
	for _, name := range []string{"static", "file_sd", "file_sd_targets"} {
		if examples[name] == "" {
			t.Fatalf("docs/install.md has no prometheus-example:%s", name)
		}
	}
	dir := t.TempDir()
	targets := filepath.Join(dir, "targets")
	if err := os.Mkdir(targets, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(targets, "clockwatch-rack1.yml"), []byte(examples["file_sd_targets"]), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"static", "file_sd"} {
		cfg := strings.ReplaceAll(examples[name], "/etc/prometheus/targets", targets)
		for _, want := range []string{"job_name: clockwatch", "target_label: instance"} {
			if !strings.Contains(cfg, want) {
				t.Errorf("%s example: no %q", name, want)
			}
		}
		path := filepath.Join(dir, name+".yml")
		if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		if out := run(t, "promtool", "check", "config", "--syntax-only", path); !strings.Contains(out, "SUCCESS") {
			t.Errorf("promtool check config of the %s example:\n%s", name, out)
		}
	}
	// The file_sd targets file too, as Prometheus reads it.
	if out := run(t, "promtool", "check", "config", filepath.Join(dir, "file_sd.yml")); !strings.Contains(out, "SUCCESS") {
		t.Errorf("promtool check config with the targets file:\n%s", out)
	}
}
