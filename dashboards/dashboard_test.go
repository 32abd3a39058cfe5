package dashboards

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/clockwatch/clockwatch/internal/chronydtest"
	"github.com/clockwatch/clockwatch/internal/daemontest"
	"github.com/clockwatch/clockwatch/internal/metricsdoc"
	"github.com/clockwatch/clockwatch/internal/peers"
	"github.com/clockwatch/clockwatch/internal/promtest"
	"github.com/clockwatch/clockwatch/internal/testtool"
	"github.com/clockwatch/clockwatch/mixin/generate"
)

const (
	dashboardFile  = "clockwatch.json"
	metricsDocFile = "../docs/metrics.md"
	gridWidth      = 24
)

// dashboard is the part of Grafana's dashboard model the tests look at.
type dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []variable `json:"list"`
	} `json:"templating"`
	Annotations struct {
		List []annotation `json:"list"`
	} `json:"annotations"`
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panel struct {
	ID         int         `json:"id"`
	Type       string      `json:"type"`
	Title      string      `json:"title"`
	Datasource *datasource `json:"datasource"`
	GridPos    struct {
		X, Y, W, H int
	} `json:"gridPos"`
	Targets []struct {
		Expr       string      `json:"expr"`
		RefID      string      `json:"refId"`
		Datasource *datasource `json:"datasource"`
	} `json:"targets"`
	Panels      []panel `json:"panels"` // a collapsed row's panels
	FieldConfig struct {
		Defaults struct {
			Unit       string `json:"unit"`
			Thresholds *struct {
				Steps []struct {
					Value *float64 `json:"value"`
				} `json:"steps"`
			} `json:"thresholds"`
			Custom struct {
				ThresholdsStyle *struct {
					Mode string `json:"mode"`
				} `json:"thresholdsStyle"`
			} `json:"custom"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
}

type variable struct {
	Type       string      `json:"type"`
	Name       string      `json:"name"`
	Query      any         `json:"query"`
	Datasource *datasource `json:"datasource"`
}

type annotation struct {
	Name       string      `json:"name"`
	Expr       string      `json:"expr"`
	Datasource *datasource `json:"datasource"`
}

func load(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	var d dashboard
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// allPanels flattens rows.
func (d dashboard) allPanels() []panel {
	var out []panel
	for _, p := range d.Panels {
		out = append(out, p)
		out = append(out, p.Panels...)
	}
	return out
}

// query is one PromQL query of the dashboard, named for messages.
type query struct {
	where string
	expr  string
}

// queries returns every PromQL query: panel targets, annotations, and the
// instance variable's label_values() as the series selector it reads.
func (d dashboard) queries() []query {
	var out []query
	for _, p := range d.allPanels() {
		for _, tg := range p.Targets {
			out = append(out, query{fmt.Sprintf("panel %d %q target %s", p.ID, p.Title, tg.RefID), tg.Expr})
		}
	}
	for _, a := range d.Annotations.List {
		if a.Expr != "" {
			out = append(out, query{fmt.Sprintf("annotation %q", a.Name), a.Expr})
		}
	}
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(string); ok && v.Type == "query" {
			args := strings.TrimSuffix(strings.TrimPrefix(q, "label_values("), ")")
			if i := strings.LastIndex(args, ","); i > 0 {
				out = append(out, query{fmt.Sprintf("variable %q", v.Name), args[:i]})
			}
		}
	}
	return out
}

// substitute replaces Grafana's variables the way Grafana would for a
// dashboard showing every instance over the last hour.
func substitute(expr string) string {
	return strings.NewReplacer(
		"$__rate_interval", "1m",
		"$__interval", "15s",
		"$__range", "1h",
		"${instance}", ".+",
		"$instance", ".+",
		"${job}", ".+",
		"$job", ".+",
		"${cluster}", ".+",
		"$cluster", ".+",
	).Replace(expr)
}

func TestLayout(t *testing.T) {
	t.Parallel()
	d := load(t)
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 30 {
		t.Errorf("uid %q, title %q, schemaVersion %d: want all set (schemaVersion >= 30)", d.UID, d.Title, d.SchemaVersion)
	}
	ids := map[int]string{}
	type rect struct {
		id         int
		x, y, w, h int
	}
	var rects []rect
	for _, p := range d.allPanels() {
		if p.ID <= 0 {
			t.Errorf("panel %q has id %d, want a positive id", p.Title, p.ID)
		}
		if other, dup := ids[p.ID]; dup {
			t.Errorf("panels %q and %q share id %d", other, p.Title, p.ID)
		}
		ids[p.ID] = p.Title
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.Y < 0 || g.W > gridWidth || g.X+g.W > gridWidth {
			t.Errorf("panel %d %q: gridPos %+v outside the %d-column grid", p.ID, p.Title, g, gridWidth)
		}
		if p.Type == "row" && (g.W != gridWidth || g.H != 1 || g.X != 0) {
			t.Errorf("row %d %q: gridPos %+v, want the full width and height 1", p.ID, p.Title, g)
		}
		if p.Type != "row" && p.Title == "" {
			t.Errorf("panel %d has no title", p.ID)
		}
		for _, r := range rects {
			if g.X < r.x+r.w && r.x < g.X+g.W && g.Y < r.y+r.h && r.y < g.Y+g.H {
				t.Errorf("panel %d %q %+v overlaps panel %d", p.ID, p.Title, g, r.id)
			}
		}
		rects = append(rects, rect{p.ID, g.X, g.Y, g.W, g.H})
	}
	// Panels must come in reading order, or Grafana reorders them on save.
	sorted := slices.IsSortedFunc(rects, func(a, b rect) int {
		if a.y != b.y {
			return a.y - b.y
		}
		return a.x - b.x
	})
	if !sorted {
		t.Error("panels are not listed top to bottom, left to right")
	}
}

func TestVariablesAndDatasources(t *testing.T) {
	t.Parallel()
	d := load(t)
	vars := map[string]variable{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v
	}
	if v := vars["datasource"]; v.Type != "datasource" || v.Query != "prometheus" {
		t.Errorf("variable datasource = %+v, want a prometheus data source variable", v)
	}
	for _, name := range []string{"job", "instance"} {
		if v := vars[name]; v.Type != "query" || v.Datasource == nil || v.Datasource.UID != "${datasource}" {
			t.Errorf("variable %s = %+v, want a query on ${datasource}", name, v)
		}
	}
	if q, _ := vars["job"].Query.(string); !strings.Contains(q, `job="clockwatch"`) {
		t.Errorf("variable job: query %q does not use the mixin's selector job=\"clockwatch\"", q)
	}
	wantDS := datasource{Type: "prometheus", UID: "${datasource}"}
	for _, p := range d.allPanels() {
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || *p.Datasource != wantDS {
			t.Errorf("panel %d %q: datasource %v, want %v", p.ID, p.Title, p.Datasource, wantDS)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %d %q has no query", p.ID, p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Datasource == nil || *tg.Datasource != wantDS {
				t.Errorf("panel %d %q target %s: datasource %v, want %v", p.ID, p.Title, tg.RefID, tg.Datasource, wantDS)
			}
			if !strings.Contains(tg.Expr, "$instance") || !strings.Contains(tg.Expr, "$job") {
				t.Errorf("panel %d %q target %s ignores the job or instance variable: %s", p.ID, p.Title, tg.RefID, tg.Expr)
			}
		}
	}
	var steps bool
	for _, a := range d.Annotations.List {
		if a.Expr != "" && strings.Contains(a.Expr, "clockwatch_clock_steps_total") {
			steps = true
		}
	}
	if !steps {
		t.Error("no annotation marks clock steps")
	}
}

// TestRequiredPanels checks the dashboard shows what an SRE needs (issue 6):
// each topic has a panel of the right type querying the right metric, and
// the offset panel draws the ±500 ms lines where clockwatch pages.
func TestRequiredPanels(t *testing.T) {
	t.Parallel()
	d := load(t)
	for _, want := range []struct {
		title, typ, metric string
	}{
		{"Offset from true time", "timeseries", "clockwatch_chrony_tracking_system_time_offset_seconds"},
		{"Wall/boot gap change (10m)", "timeseries", "clockwatch_clock_wall_boot_gap_seconds"},
		{"Frequency correction", "timeseries", "clockwatch_kernel_frequency_offset_ratio"},
		{"Error bound", "timeseries", "clockwatch_chrony_clock_error_bound_seconds"},
		{"chrony sources", "table", "clockwatch_chrony_source_info"},
		{"NTP peers: offsets", "timeseries", "clockwatch_ntp_probe_offset_seconds"},
		{"Stepdown subscribers", "timeseries", "clockwatch_stepdown_subscribers"},
		{"Stepdown events", "timeseries", "clockwatch_stepdown_events_total"},
		{"Agent status", "table", "clockwatch_clock_up"},
		{"Skew to the fleet, per node", "timeseries", "clockwatch_peer_fleet_offset_seconds"},
		{"Offsets between nodes", "heatmap", "clockwatch_peer_offset_seconds"},
	} {
		var found *panel
		for _, p := range d.allPanels() {
			if p.Title == want.title && p.Type == want.typ {
				found = &p
				break
			}
		}
		if found == nil {
			t.Errorf("no %s panel %q", want.typ, want.title)
			continue
		}
		var uses bool
		for _, tg := range found.Targets {
			uses = uses || strings.Contains(tg.Expr, want.metric)
		}
		if !uses {
			t.Errorf("panel %q does not query %s", want.title, want.metric)
		}
		if want.title != "Offset from true time" {
			continue
		}
		def := found.FieldConfig.Defaults
		var lines []float64
		if def.Thresholds != nil {
			for _, st := range def.Thresholds.Steps {
				if st.Value != nil {
					lines = append(lines, *st.Value)
				}
			}
		}
		if !slices.Equal(lines, []float64{-0.5, 0.5}) || def.Unit != "s" || def.Custom.ThresholdsStyle == nil || def.Custom.ThresholdsStyle.Mode == "off" {
			t.Errorf("offset panel: thresholds %v, unit %q, style %v; want lines at -0.5 and 0.5 s, shown", lines, def.Unit, def.Custom.ThresholdsStyle)
		}
	}
	var stepdowns bool
	for _, a := range d.Annotations.List {
		stepdowns = stepdowns || strings.Contains(a.Expr, "clockwatch_stepdown_events_total")
	}
	if !stepdowns {
		t.Error("no annotation marks stepdown events")
	}
}

// TestMetricsDocumented checks every metric and label a query uses against
// docs/metrics.md.
func TestMetricsDocumented(t *testing.T) {
	t.Parallel()
	documented, err := metricsdoc.Read(metricsDocFile)
	if err != nil {
		t.Fatal(err)
	}
	var waiting []string
	for _, q := range load(t).queries() {
		for _, err := range metricsdoc.Check(substitute(q.expr), documented, nil) {
			name, _, _ := strings.Cut(err.Error(), " ")
			if metricsdoc.PendingWhy(name) != "" && strings.HasSuffix(err.Error(), "is not in docs/metrics.md") {
				waiting = append(waiting, name)
				continue
			}
			t.Errorf("%s: %v", q.where, err)
		}
	}
	for m := range metricsdoc.Pending() {
		if _, ok := documented[m]; ok {
			t.Errorf("%s is documented now: remove it from metricsdoc.Pending", m)
		}
	}
	if len(waiting) > 0 {
		slices.Sort(waiting)
		t.Logf("metrics used but not documented yet (pending other work): %s", strings.Join(slices.Compact(waiting), ", "))
	}
}

// TestQueriesReturnData runs every query of the dashboard against a real
// Prometheus that scrapes a real clockwatch, which reads a real chronyd -x
// (behind a test NTP server) and probes that server itself. Each query must
// parse and run; each must return data, except those whose metrics exist
// only in a setup this test does not make: ntpd (its test needs a network
// namespace), and chrony and the NTP probes when chronyd is not installed
// outside CI.
func TestQueriesReturnData(t *testing.T) {
	t.Parallel()
	testtool.Short(t)
	testtool.Require(t, "prometheus")
	documented, err := metricsdoc.Read(metricsDocFile)
	if err != nil {
		t.Fatal(err)
	}
	// ntpd enabled where none listens: clockwatch_ntpd_up 0 is data too.
	// Two peers on loopback for the fleet's row (real responders).
	peer1, peer2 := peerOnLoopback(t), peerOnLoopback(t)
	ntpdConf := fmt.Sprintf("ntpd: {enabled: true, address: %q, poll_interval: 1s, timeout: 200ms}\n", promtest.FreeAddr(t)) +
		fmt.Sprintf("peers: {listen: \"127.0.0.1:0\", static: [%q, %q], interval: 1s, exchanges: 2, timeout: 200ms}\n", peer1, peer2)
	args := []string{"--config.file=" + writeFile(t, ntpdConf)}
	withChrony := testtool.InCI() || haveChronyd()
	if withChrony {
		c := chronydtest.Start(t, chronydtest.Options{Sources: 2})
		args = []string{"--config.file=" + writeFile(t, ntpdConf+fmt.Sprintf(`chrony:
  address: %s
  conf_path: %s
  poll_interval: 250ms
  timeout: 200ms
ntp_probes:
  servers: [%q, %q]
  interval: 1s
  samples: 1
  sample_spacing: 0s
`, c.Socket, c.Conf, c.Servers[0].Addr(), c.Servers[1].Addr()))}
	}
	cw := daemontest.Start(t, daemontest.Build(t), daemontest.Options{Args: args})
	prom := promtest.StartPrometheus(t, promtest.PrometheusOptions{Targets: []string{cw.Addr}})
	prom.WaitTargetsUp(t, "clockwatch", 1, 60*time.Second)
	// Enough samples for rate() and delta() over the substituted windows,
	// and chronyd synchronised with statistics for its sources.
	prom.WaitVector(t, `count_over_time(clockwatch_clock_up[1m]) >= 3`, 30*time.Second, promtest.NonEmpty)
	prom.WaitVector(t, `clockwatch_peer_measured == 2`, 30*time.Second, promtest.NonEmpty)
	if withChrony {
		prom.WaitVector(t, `clockwatch_chrony_selectable_sources >= 1 and on () count(clockwatch_chrony_source_estimated_offset_seconds) == 2 and on () count(clockwatch_ntp_probe_offset_seconds) == 2`, 60*time.Second, promtest.NonEmpty)
	}

	queriesReturnData(t, prom, load(t), substitute, documented, withChrony)

	// The same clockwatch scraped under another job, with the dashboard
	// generated from the mixin for that job: its $job variable lists that
	// job, and every query, with $job set to it, has the same data.
	other := promtest.StartPrometheus(t, promtest.PrometheusOptions{Targets: []string{cw.Addr}, Job: "node-clock"})
	other.WaitTargetsUp(t, "node-clock", 1, 60*time.Second)
	other.WaitVector(t, `count_over_time(clockwatch_clock_up[1m]) >= 3`, 30*time.Second, promtest.NonEmpty)
	if withChrony {
		other.WaitVector(t, `clockwatch_chrony_selectable_sources >= 1 and on () count(clockwatch_ntp_probe_offset_seconds) == 2`, 60*time.Second, promtest.NonEmpty)
	}
	files, err := generate.Generate("../mixin", map[string]any{"clockwatchSelector": `job="node-clock"`})
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(files["dashboards/"+dashboardFile], &d); err != nil {
		t.Fatal(err)
	}
	var jobs []string
	for _, q := range d.queries() {
		if q.where != `variable "job"` {
			continue
		}
		v, err := other.QueryVector(context.Background(), q.expr)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range v {
			jobs = append(jobs, string(s.Metric["job"]))
		}
	}
	if !slices.Equal(slices.Compact(jobs), []string{"node-clock"}) {
		t.Fatalf("the job variable of the dashboard for job node-clock lists %v", jobs)
	}
	queriesReturnData(t, other, d, func(e string) string {
		return substitute(strings.NewReplacer("${job}", "node-clock", "$job", "node-clock").Replace(e))
	}, documented, withChrony)
}

// queriesReturnData runs every query of d, with Grafana's variables
// substituted by sub, and fails on those that do not parse or return no
// data (but for what absentHere explains).
func queriesReturnData(t *testing.T, prom *promtest.Prometheus, d dashboard, sub func(string) string, documented map[string]metricsdoc.Metric, withChrony bool) {
	t.Helper()
	var empty []string
	for _, q := range d.queries() {
		expr := sub(q.expr)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		v, err := prom.Query(ctx, expr)
		cancel()
		if err != nil {
			t.Errorf("%s: %v", q.where, err)
			continue
		}
		if n := samples(v); n > 0 {
			continue
		}
		// Comparisons (a failing collector, a step in the last minute)
		// are empty on a healthy node; their operand must have data.
		if operand, ok := strings.CutSuffix(expr, " == 0"); ok {
			expr = operand
		} else if operand, ok := strings.CutSuffix(expr, " > 0"); ok {
			expr = operand
		} else {
			expr = ""
		}
		if expr != "" {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			v, err := prom.Query(ctx, expr)
			cancel()
			if err == nil && samples(v) > 0 {
				continue
			}
		}
		if why := absentHere(q.expr, documented, withChrony); why != "" {
			empty = append(empty, fmt.Sprintf("%s (%s)", q.where, why))
			continue
		}
		t.Errorf("%s returned no data: %s", q.where, sub(q.expr))
	}
	sort.Strings(empty)
	if len(empty) > 0 {
		t.Logf("no data in this setup, as expected:\n  %s", strings.Join(empty, "\n  "))
	}
}

// peerOnLoopback runs a clockwatch peer's responder on loopback (in this
// process) and returns its address.
func peerOnLoopback(t *testing.T) string {
	t.Helper()
	c, err := peers.ListenUDP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := peers.NewResponder(c, peers.ResponderOptions{Rate: 100, Burst: 100, Allowed: func(a netip.Addr) bool { return a.IsLoopback() }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return c.LocalAddr().String()
}

// writeFile writes content to a new file in a temporary directory.
func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "clockwatch.yml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// haveChronyd reports whether chronyd is installed.
func haveChronyd() bool {
	for _, p := range []string{"/usr/sbin/chronyd", "/sbin/chronyd"} {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	_, err := exec.LookPath("chronyd")
	return err == nil
}

// samples counts the samples or series of a query result.
func samples(v model.Value) int {
	switch v := v.(type) {
	case model.Vector:
		return len(v)
	case model.Matrix:
		return len(v)
	case *model.Scalar:
		return 1
	}
	return 0
}

// absentHere says why a query may be empty in this test's setup: it uses a
// metric documented as "Only when ..." that belongs to ntpd (not run here),
// or to chrony and the NTP probes when chronyd is not installed, or one
// still pending (metricsdoc.Pending). "" means the query must have data.
func absentHere(expr string, documented map[string]metricsdoc.Metric, withChrony bool) string {
	sels, err := metricsdoc.Selectors(substitute(expr))
	if err != nil {
		return ""
	}
	for _, s := range sels {
		if why := metricsdoc.PendingWhy(s.Metric); why != "" {
			return s.Metric + " pending: " + why
		}
		m, ok := metricsdoc.Lookup(documented, s.Metric)
		if !ok || !m.Conditional() {
			continue
		}
		when, _, _ := strings.Cut(m.Meaning, ":")
		switch {
		case strings.HasPrefix(s.Metric, "clockwatch_ntpd_"):
			return s.Metric + ": " + when + "; ntpd is not run here"
		case !withChrony && (strings.HasPrefix(s.Metric, "clockwatch_chrony_") || strings.HasPrefix(s.Metric, "clockwatch_ntp_probe_")):
			return s.Metric + ": " + when + "; chronyd is not installed"
		}
	}
	return ""
}
