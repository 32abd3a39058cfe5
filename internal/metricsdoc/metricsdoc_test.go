package metricsdoc

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const doc = `# metrics

## Local clocks

| name | type | unit | labels | meaning |
|---|---|---|---|---|
| clockwatch_clock_up | gauge | bool | | Whether the clocks could be read. |
| clockwatch_clock_steps_total | counter | | direction | Only when steps are watched: steps. |
| not_ours | gauge | | | Ignored. |

## Stepdown

| name | type | unit | labels | meaning |
|---|---|---|---|---|
| ` + "`clockwatch_stepdown_ack_latency_seconds`" + ` | histogram | seconds | | Ack latency. |
`

func TestParse(t *testing.T) {
	t.Parallel()
	got, err := Parse(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Metric{
		"clockwatch_clock_up":                     {Name: "clockwatch_clock_up", Type: "gauge", Section: "Local clocks", Meaning: "Whether the clocks could be read."},
		"clockwatch_clock_steps_total":            {Name: "clockwatch_clock_steps_total", Type: "counter", Labels: []string{"direction"}, Section: "Local clocks", Meaning: "Only when steps are watched: steps."},
		"clockwatch_stepdown_ack_latency_seconds": {Name: "clockwatch_stepdown_ack_latency_seconds", Type: "histogram", Section: "Stepdown", Meaning: "Ack latency."},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}
	if !got["clockwatch_clock_steps_total"].Conditional() || got["clockwatch_clock_up"].Conditional() {
		t.Error("Conditional: want true for an \"Only when\" row only")
	}
	if _, err := Parse(strings.NewReader(doc + "| clockwatch_clock_up | gauge | | | again |\n")); err == nil {
		t.Error("a metric listed twice gave no error")
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	documented, err := Parse(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	extra := map[string]bool{"instance:clockwatch_clock_steps:increase10m": true}
	tests := []struct {
		expr string
		want []string
	}{
		{expr: `clockwatch_clock_up == 0`},
		{expr: `increase(clockwatch_clock_steps_total{direction="backward",instance=~"$instance"}[5m]) > 0`},
		{expr: `histogram_quantile(0.99, sum by (le) (rate(clockwatch_stepdown_ack_latency_seconds_bucket[5m])))`},
		{expr: `rate(clockwatch_stepdown_ack_latency_seconds_sum[5m]) / rate(clockwatch_stepdown_ack_latency_seconds_count[5m])`},
		{expr: `up{job="clockwatch"} == 0 or absent(up{job="clockwatch"})`},
		{expr: `instance:clockwatch_clock_steps:increase10m > 0`},
		{expr: `clockwatch_clock_upp`, want: []string{"clockwatch_clock_upp is not in docs/metrics.md"}},
		{expr: `clockwatch_clock_steps_total_bucket`, want: []string{"clockwatch_clock_steps_total_bucket is not in docs/metrics.md"}},
		{expr: `clockwatch_clock_up{collector="x"}`, want: []string{`clockwatch_clock_up has no label "collector" in docs/metrics.md (documented: [])`}},
		{expr: `{__name__=~"clockwatch_.*"}`, want: []string{`"{__name__=~\"clockwatch_.*\"}" selects metrics by a pattern (__name__=~"clockwatch_.*"): name them`}},
		{expr: `clockwatch_clock_up +`, want: []string{"parsing"}},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, e := range Check(tc.expr, documented, extra) {
				got = append(got, e.Error())
			}
			if len(tc.want) == 1 && tc.want[0] == "parsing" && len(got) == 1 && strings.HasPrefix(got[0], "parsing") {
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Check(%q) (-want +got):\n%s", tc.expr, diff)
			}
		})
	}
}

func TestRead(t *testing.T) {
	t.Parallel()
	m, err := Read("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m["clockwatch_build_info"]; !ok {
		t.Errorf("docs/metrics.md lacks clockwatch_build_info; read %d metrics", len(m))
	}
	if _, err := Read("testdata/missing.md"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("reading a missing file: got %v, want an error wrapping fs.ErrNotExist", err)
	}
}
