package generate

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-jsonnet"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "regenerate the mixin's outputs in the repository (same as make mixin)")

const (
	mixinDir = ".."
	repoRoot = "../.."
)

// defaultFiles are the outputs with the default config, generated once for
// the tests that read them (a Generate takes about a second).
var defaultFiles = sync.OnceValues(func() (map[string][]byte, error) { return Generate(mixinDir, nil) })

// TestGeneratedFilesUpToDate regenerates every output of the mixin and
// fails on any difference from the files in the repository: they are
// generated, never edited by hand.
func TestGeneratedFilesUpToDate(t *testing.T) {
	t.Parallel()
	files, err := defaultFiles()
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
			t.Errorf("%v (run make mixin)", err)
			continue
		}
		if diff := cmp.Diff(string(files[name]), string(have)); diff != "" {
			t.Errorf("%s is not what the mixin generates (-mixin +file); edit mixin/ and run make mixin:\n%s", name, diff)
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
	files, err := defaultFiles()
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
	// Its configuration table has every chart value (every threshold).
	for _, v := range chartValues {
		if !strings.Contains(string(readme), "| `"+v.key+"`") && !strings.Contains(string(readme), ", `"+v.key+"` |") {
			t.Errorf("mixin/README.md's configuration table does not have %s", v.key)
		}
	}
}

// TestNumberLikeGo: utils.number writes a threshold as Go's %g does, which
// the chart's helper uses (printf "%g"); jsonnet's own %g would write
// 125e-6 as 0.00013. utils.duration the same, in its unit.
func TestNumberLikeGo(t *testing.T) {
	t.Parallel()
	vm := jsonnet.MakeVM()
	vm.Importer(&jsonnet.FileImporter{JPaths: []string{mixinDir}})
	for _, x := range []float64{0, 0.5, 0.1, 0.25, 100, 100e-6, 1e-3, 125e-6, 0.000999, 1.25e-5, 1e-5, 1e-4, 9.99e-5,
		0.0005005, 0.1234567, 2.5, 1e6, 999999.123, 1234567, 123456789012, 1e-10, 3e21, 1e100, -0.25, 0.3, 7e-7} {
		out, err := vm.EvaluateAnonymousSnippet("number.jsonnet", fmt.Sprintf(
			"local u = import 'lib/utils.libsonnet'; [u.number(%[1]s), u.duration(%[1]s)]", strconv.FormatFloat(x, 'g', -1, 64)))
		if err != nil {
			t.Fatalf("%g: %v", x, err)
		}
		var got []string
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("%g", x); got[0] != want {
			t.Errorf("utils.number(%v) = %q, want %q (Go's %%g)", x, got[0], want)
		}
		var want string
		switch a := x; {
		case a < 1e-3:
			want = fmt.Sprintf("%gus", x*1e6)
		case a < 1:
			want = fmt.Sprintf("%gms", x*1e3)
		default:
			want = fmt.Sprintf("%gs", x)
		}
		// x*1e6 in float64 may miss the decimal product by an ulp, which
		// number's 12 digits round away and the chart's decimal product
		// (sprig's mulf) does not have: compare as 12 digits.
		if got[1] != want && !sameDigits(got[1], want) {
			t.Errorf("utils.duration(%v) = %q, want %q", x, got[1], want)
		}
	}
}

func sameDigits(a, b string) bool {
	unit := func(s string) (float64, string) {
		i := strings.IndexAny(s, "ums")
		f, _ := strconv.ParseFloat(s[:i], 64)
		return f, s[i:]
	}
	fa, ua := unit(a)
	fb, ub := unit(b)
	return ua == ub && strconv.FormatFloat(fa, 'g', 12, 64) == strconv.FormatFloat(fb, 'g', 12, 64)
}

// TestChartValues: values.yaml's generated block has every threshold of
// the mixin's _config with its default and the selector, and the chart's
// copies have a placeholder for each and no number of their own where a
// threshold goes; a config changes the block's values.
func TestChartValues(t *testing.T) {
	t.Parallel()
	files, err := Generate(mixinDir, map[string]any{"offsetCriticalSeconds": 0.2, "clockwatchSelector": `job="node-clock"`})
	if err != nil {
		t.Fatal(err)
	}
	var values struct{ Mixin map[string]any }
	if err := yaml.Unmarshal(files[ChartValues], &values); err != nil {
		t.Fatal(err)
	}
	vm := jsonnet.MakeVM()
	vm.Importer(&jsonnet.FileImporter{JPaths: []string{mixinDir}})
	defaults, err := resolve(vm, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{}
	for k, r := range defaults {
		if _, ok := r.Value.(float64); ok || k == "criticalSeverity" || k == "runbookURLPattern" {
			want[k] = r.Value
		}
	}
	want["selector"] = `job="node-clock"`
	want["offsetCriticalSeconds"] = 0.2
	got := map[string]any{}
	for k, v := range values.Mixin {
		if i, ok := v.(int); ok {
			v = float64(i)
		}
		got[k] = v
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("values.yaml's mixin block (-want +got):\n%s", diff)
	}
	rules := string(files[ChartRules])
	for k := range want {
		if !strings.Contains(rules, "@"+k+"@") && !strings.Contains(rules, "@"+k+":") {
			t.Errorf("%s has no placeholder for %s", ChartRules, k)
		}
	}
	if strings.Contains(rules, "> 0.2") || strings.Contains(rules, `job="node-clock"`) ||
		!strings.Contains(rules, "abs(clockwatch_ntpd_offset_seconds{@selector@}) > @offsetCriticalSeconds@") {
		t.Errorf("%s has a threshold or the selector written in:\n%s", ChartRules, rules)
	}
	if !strings.Contains(string(files[ChartJSON]), "@selector@") {
		t.Errorf("%s has no @selector@", ChartJSON)
	}
}

// TestChartSelfCheck: the generator refuses a mixin whose chart copies the
// chart's helper could not fill to the mixin's own output: a threshold
// computed with, and text that looks like a placeholder.
func TestChartSelfCheck(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, old, new, want string }{
		{"computed threshold", "offsetWarning: utils.duration($._config.offsetWarningSeconds)",
			"offsetWarning: utils.duration($._config.offsetWarningSeconds * 2)", "does the mixin compute with a threshold"},
		{"placeholder-like text", "summary: 'A stepdown drill ran.'", "summary: 'A stepdown drill ran @team@.'",
			"has @team@, which the chart's helper would take for a placeholder"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			if err := os.CopyFS(filepath.Join(root, "mixin"), os.DirFS(mixinDir)); err != nil {
				t.Fatal(err)
			}
			values := filepath.Join(root, ChartValues)
			if err := os.MkdirAll(filepath.Dir(values), 0o755); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(repoRoot, ChartValues))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(values, b, 0o644); err != nil {
				t.Fatal(err)
			}
			alerts := filepath.Join(root, "mixin/alerts/alerts.libsonnet")
			a, err := os.ReadFile(alerts)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(a), c.old) {
				t.Fatalf("alerts.libsonnet has no %q", c.old)
			}
			if err := os.WriteFile(alerts, []byte(strings.Replace(string(a), c.old, c.new, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := Generate(filepath.Join(root, "mixin"), nil); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Generate: err = %v, want %q", err, c.want)
			}
		})
	}
}
