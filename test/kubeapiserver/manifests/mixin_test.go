package manifests

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// mixinOutput runs the mixin's generator as a user does (go run
// ./mixin/cmd/mixin -config JSON -out DIR, in the main module) and returns
// its rule groups and its dashboard, as JSON values.
func mixinOutput(t *testing.T, config map[string]any) (groups, dashboard any) {
	t.Helper()
	cfg, err := json.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command("go", "run", "./mixin/cmd/mixin", "-out", dir, "-config", string(cfg))
	cmd.Dir = Root
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run ./mixin/cmd/mixin -config %s: %v\n%s", cfg, err, out)
	}
	var rule struct {
		Spec struct{ Groups any }
	}
	readYAML(t, filepath.Join(dir, "deploy/kubernetes/prometheus-operator/prometheusrule.yaml"), &rule)
	readYAML(t, filepath.Join(dir, "dashboards/clockwatch.json"), &dashboard)
	return rule.Spec.Groups, dashboard
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// chartMixin renders the chart with the PrometheusRule and the dashboard
// and returns their groups and dashboard as JSON values.
func chartMixin(t *testing.T, helm string, args ...string) (groups, dashboard any) {
	t.Helper()
	b, err := HelmTemplateArgs(helm, Root, "clockwatch", "monitoring", append([]string{"--set", "prometheusRule.enabled=true"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := Documents(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		o, err := Decode(d)
		if err != nil {
			t.Fatal(err)
		}
		switch o.Kind {
		case "PrometheusRule":
			var r struct {
				Spec struct{ Groups any }
			}
			if err := json.Unmarshal(o.JSON, &r); err != nil {
				t.Fatal(err)
			}
			groups = r.Spec.Groups
		case "ConfigMap":
			if s, ok := o.Value.(*corev1.ConfigMap).Data["clockwatch.json"]; ok {
				if err := json.Unmarshal([]byte(s), &dashboard); err != nil {
					t.Fatalf("the dashboard ConfigMap's clockwatch.json: %v", err)
				}
			}
		}
	}
	if groups == nil || dashboard == nil {
		t.Fatalf("no PrometheusRule or no dashboard ConfigMap in helm template %v", args)
	}
	return groups, dashboard
}

// TestHelmMixinValues: the chart's PrometheusRule and dashboard are the
// mixin's output for the chart's mixin values: with the defaults, what the
// mixin generates with its defaults; with a changed selector and changed
// thresholds (from --set, as strings and integers, and from a values file),
// what go run ./mixin/cmd/mixin -config generates with the same.
func TestHelmMixinValues(t *testing.T) {
	helm := requireHelm(t)
	valuesFile := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(valuesFile, []byte(`mixin:
  selector: job="node-clock", namespace="monitoring"
  errorBoundWarningSeconds: 0.0005005
  ptpErrorBoundWarningSeconds: 2.5e-3
  criticalSeverity: page
  runbookURLPattern: https://wiki.example/clockwatch?a=1%%20&b="2"#%s
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		args   []string
		config map[string]any
		expr   string // in the changed rules
	}{
		{name: "defaults", config: map[string]any{},
			expr: `abs(clockwatch_ntpd_offset_seconds{job="clockwatch"}) > 0.5`},
		{name: "changed",
			args: []string{"--values", valuesFile,
				"--set", "mixin.offsetCriticalSeconds=0.25", // a string to helm
				"--set", "mixin.ptpOffsetWarningSeconds=0.000125",
				"--set", "mixin.stepForwardCriticalSeconds=2.5",
				"--set", "mixin.frequencyCorrectionWarningPPM=250", // an int64
			},
			config: map[string]any{
				"clockwatchSelector":            `job="node-clock", namespace="monitoring"`,
				"errorBoundWarningSeconds":      0.0005005,
				"ptpErrorBoundWarningSeconds":   2.5e-3,
				"offsetCriticalSeconds":         0.25,
				"ptpOffsetWarningSeconds":       0.000125,
				"stepForwardCriticalSeconds":    2.5,
				"frequencyCorrectionWarningPPM": 250,
				"criticalSeverity":              "page",
				"runbookURLPattern":             `https://wiki.example/clockwatch?a=1%%20&b="2"#%s`,
			},
			expr: `abs(clockwatch_ntpd_offset_seconds{job="node-clock", namespace="monitoring"}) > 0.25`},
	} {
		t.Run(c.name, func(t *testing.T) {
			groups, dashboard := chartMixin(t, helm, c.args...)
			wantGroups, wantDashboard := mixinOutput(t, c.config)
			if diff := cmp.Diff(wantGroups, groups); diff != "" {
				t.Errorf("the chart's PrometheusRule groups are not the mixin's (-mixin +chart):\n%s", diff)
			}
			if diff := cmp.Diff(wantDashboard, dashboard); diff != "" {
				t.Errorf("the chart's dashboard is not the mixin's (-mixin +chart):\n%s", diff)
			}
			if b, _ := json.Marshal(groups); !strings.Contains(string(b), jsonString(c.expr)) {
				t.Errorf("the rules do not have %s", c.expr)
			}
		})
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return strings.Trim(string(b), `"`)
}

// TestHelmMixinBadValues: a threshold that is not a number, a value the
// mixin does not have (a typo) and an unset one fail helm template with a
// message naming the value, instead of rendering rules that never fire.
func TestHelmMixinBadValues(t *testing.T) {
	helm := requireHelm(t)
	for set, want := range map[string]string{
		"mixin.offsetCriticalSeconds=half":                   "mixin.offsetCriticalSeconds: half is not a number",
		"mixin.offsetCriticalSecond=0.2":                     "mixin.offsetCriticalSecond: the mixin has no such value",
		"mixin.offsetCriticalSeconds=null":                   "mixin.offsetCriticalSeconds is not set",
		"mixin.runbookURLPattern=https://wiki.example/%s/%d": "mixin.runbookURLPattern: \"https://wiki.example/%s/%d\": want a pattern with one %s",
	} {
		_, err := HelmTemplate(helm, Root, "clockwatch", "monitoring", "prometheusRule.enabled=true", set)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("helm template --set %s: err = %v, want %q", set, err, want)
		}
	}
}
