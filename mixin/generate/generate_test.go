package generate

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "regenerate the mixin's outputs in the repository (same as go run ./mixin/cmd/mixin)")

const (
	mixinDir = ".."
	repoRoot = "../.."
)

// TestGeneratedFilesUpToDate regenerates every output of the mixin and
// fails on any difference from the files in the repository: they are
// generated, never edited by hand.
func TestGeneratedFilesUpToDate(t *testing.T) {
	t.Parallel()
	files, err := Generate(mixinDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"alerts/clockwatch.rules.yml", "dashboards/clockwatch.json"} {
		if _, ok := files[name]; !ok {
			t.Errorf("the mixin does not generate %s", name)
		}
	}
	for _, name := range Names(files) {
		path := filepath.Join(repoRoot, name)
		if *update {
			if err := os.WriteFile(path, files[name], 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		have, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%v (run go run ./mixin/cmd/mixin)", err)
			continue
		}
		if diff := cmp.Diff(string(files[name]), string(have)); diff != "" {
			t.Errorf("%s is not what the mixin generates (-mixin +file); edit mixin/ and run go run ./mixin/cmd/mixin:\n%s", name, diff)
		}
	}
}

// TestConfigReachesEveryQuery generates the files for another selector in a
// multi-cluster setup and checks every vector selector of every rule uses
// that selector, and every dashboard query selects by $cluster, $job and
// $instance: a query that forgot the selector would read another job's
// series.
func TestConfigReachesEveryQuery(t *testing.T) {
	t.Parallel()
	files, err := Generate(mixinDir, map[string]any{
		"clockwatchSelector": `job="node-clock"`,
		"showMultiCluster":   true,
		"clusterLabel":       "region",
		"runbookURLPattern":  "https://wiki.example/clockwatch#%s",
		"criticalSeverity":   "page",
	})
	if err != nil {
		t.Fatal(err)
	}
	// The header names the selector the rules were rendered with.
	if h := string(files["alerts/clockwatch.rules.yml"]); !strings.Contains(h, "# clockwatch's series with job=\"node-clock\";") || strings.Contains(h, `job="clockwatch"`) {
		t.Errorf("the rules' header does not name the selector job=\"node-clock\":\n%s", h[:min(len(h), 900)])
	}
	var rf struct {
		Groups []struct {
			Rules []struct {
				Record, Alert, Expr string
				Labels              map[string]string
				Annotations         map[string]string
			}
		}
	}
	if err := yaml.Unmarshal(files["alerts/clockwatch.rules.yml"], &rf); err != nil {
		t.Fatal(err)
	}
	var pages int
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			name := r.Record + r.Alert
			e, err := parser.NewParser(parser.Options{}).ParseExpr(r.Expr)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
				vs, ok := n.(*parser.VectorSelector)
				if !ok {
					return nil
				}
				for _, m := range vs.LabelMatchers {
					if m.Name == "job" && m.Type == labels.MatchEqual && m.Value == "node-clock" {
						return nil
					}
				}
				t.Errorf("%s: %s does not use the configured selector", name, vs)
				return nil
			})
			for _, agg := range []string{"by (", "on ("} {
				for _, part := range strings.Split(r.Expr, agg)[1:] {
					if !strings.HasPrefix(part, "region, ") {
						t.Errorf("%s: %s%s does not keep the cluster label", name, agg, strings.SplitN(part, ")", 2)[0])
					}
				}
			}
			if r.Alert == "" {
				continue
			}
			if r.Labels["severity"] == "page" {
				pages++
			}
			if want := "https://wiki.example/clockwatch#" + strings.ToLower(r.Alert); r.Annotations["runbook_url"] != want {
				t.Errorf("%s: runbook_url %q, want %q", name, r.Annotations["runbook_url"], want)
			}
		}
	}
	if pages == 0 {
		t.Error("no alert has the configured critical severity")
	}

	var d struct {
		Annotations struct{ List []struct{ Expr string } }
		Templating  struct {
			List []struct{ Name, Query any }
		}
		Panels []struct {
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(files["dashboards/clockwatch.json"], &d); err != nil {
		t.Fatal(err)
	}
	var exprs []string
	for _, a := range d.Annotations.List {
		exprs = append(exprs, a.Expr)
	}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, e := range exprs {
		if e == "" {
			continue
		}
		if strings.Count(e, "{") != strings.Count(e, `region=~"$cluster", job=~"$job", instance=~"$instance"`) {
			t.Errorf("dashboard query %q: not every selector selects by $cluster, $job and $instance", e)
		}
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		q, _ := v.Query.(string)
		vars[v.Name.(string)] = q
	}
	for name, want := range map[string]string{
		"cluster":  `label_values(clockwatch_build_info{job="node-clock"}, region)`,
		"job":      `label_values(clockwatch_build_info{region=~"$cluster", job="node-clock"}, job)`,
		"instance": `label_values(clockwatch_build_info{region=~"$cluster", job=~"$job"}, instance)`,
	} {
		if vars[name] != want {
			t.Errorf("dashboard variable %s: query %q, want %q", name, vars[name], want)
		}
	}
}

// TestBadConfig checks a wrong override fails with jsonnet's message, not
// with a broken file.
func TestBadConfig(t *testing.T) {
	t.Parallel()
	_, err := Generate(mixinDir, map[string]any{"offsetCriticalSeconds": "half a second"})
	if err == nil || !strings.Contains(err.Error(), "outputs.jsonnet") {
		t.Errorf("Generate with a string threshold: err = %v, want an evaluation error naming outputs.jsonnet", err)
	}
}

// TestReadmeNamesEveryOutput: mixin/README.md says what -out writes where:
// every file the generator writes is named there.
func TestReadmeNamesEveryOutput(t *testing.T) {
	t.Parallel()
	files, err := Generate(mixinDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(mixinDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "`-out DIR` writes") {
		t.Error("mixin/README.md does not say what -out writes")
	}
	for _, name := range Names(files) {
		if !strings.Contains(string(readme), "`"+name+"`") {
			t.Errorf("mixin/README.md does not name %s, which -out writes", name)
		}
	}
}
