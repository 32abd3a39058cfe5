package metricsdoc

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// Metric is one row of a metric table in docs/metrics.md.
type Metric struct {
	Name    string
	Type    string   // gauge, counter, histogram, ...
	Labels  []string // label names, in the order listed
	Section string   // the `## ` heading the row is under
	Meaning string
}

// Conditional reports whether the metric may be absent from a default run:
// its meaning starts with "Only when" (see docs/metrics.md).
func (m Metric) Conditional() bool { return strings.HasPrefix(m.Meaning, "Only when") }

// Read parses the metric tables of the markdown file at path.
func Read(path string) (map[string]Metric, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the metrics documentation: %w", err)
	}
	defer f.Close()
	m, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// Parse reads rows `| name | type | unit | labels | meaning |` whose name
// starts with clockwatch_, under any heading.
func Parse(r io.Reader) (map[string]Metric, error) {
	out := map[string]Metric{}
	section := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if h, ok := strings.CutPrefix(text, "## "); ok {
			section = strings.TrimSpace(h)
			continue
		}
		if !strings.HasPrefix(text, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(text, "|"), "|")
		if len(cells) < 5 {
			continue
		}
		name := strings.Trim(strings.TrimSpace(cells[0]), "`")
		if !strings.HasPrefix(name, "clockwatch_") {
			continue
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("line %d: %s is listed twice", line, name)
		}
		m := Metric{Name: name, Type: strings.TrimSpace(cells[1]), Section: section,
			Meaning: strings.TrimSpace(strings.Join(cells[4:], "|"))}
		for _, l := range strings.Split(cells[3], ",") {
			if l = strings.Trim(strings.TrimSpace(l), "`"); l != "" {
				m.Labels = append(m.Labels, l)
			}
		}
		out[name] = m
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// Selector is one metric selection in an expression: the metric name and
// the label names its matchers use.
type Selector struct {
	Metric string
	Labels []string
}

// Selectors parses a PromQL expression and returns every metric it selects,
// by name, in the order they appear. A selector without a fixed metric name
// (for example {__name__=~"..."}) is an error: it would hide what it uses.
func Selectors(expr string) ([]Selector, error) {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return nil, fmt.Errorf("parsing %q: %w", expr, err)
	}
	var out []Selector
	var selErr error
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		var s Selector
		for _, m := range vs.LabelMatchers {
			if m.Name == labels.MetricName {
				if m.Type != labels.MatchEqual {
					selErr = fmt.Errorf("%q selects metrics by a pattern (%s): name them", expr, m)
				}
				s.Metric = m.Value
				continue
			}
			s.Labels = append(s.Labels, m.Name)
		}
		if s.Metric == "" {
			selErr = fmt.Errorf("%q has a selector without a metric name: %s", expr, vs)
		}
		out = append(out, s)
		return nil
	})
	if selErr != nil {
		return nil, selErr
	}
	return out, nil
}

// Builtin reports whether name is a series Prometheus itself makes for every
// scrape target (up, scrape_duration_seconds, ...) or for alerts.
func Builtin(name string) bool {
	return slices.Contains([]string{
		"up", "scrape_duration_seconds", "scrape_samples_scraped",
		"scrape_samples_post_metric_relabeling", "scrape_series_added",
		"ALERTS", "ALERTS_FOR_STATE",
	}, name)
}

// Lookup finds a documented metric by its name or, for the _bucket, _sum
// and _count series of a histogram or summary, by its family's name.
func Lookup(documented map[string]Metric, name string) (Metric, bool) {
	return lookup(documented, name)
}

// Standard reports whether name is one of the Prometheus Go client's
// standard process_* and go_* metrics, which docs/metrics.md mentions
// without listing them.
func Standard(name string) bool {
	return strings.HasPrefix(name, "process_") || strings.HasPrefix(name, "go_")
}

// Pending returns the metrics the alert rules and the dashboard use that
// other areas of clockwatch add, with where they come from. They may be
// missing from docs/metrics.md until that work lands; once documented they
// must leave this list (the tests say so).
func Pending() map[string]string {
	// Empty: every metric the rules and the dashboard use has landed. Add
	// "name": "area, issue N" here while a rule waits for another area.
	return map[string]string{}
}

// PendingWhy returns where a pending metric comes from (see Pending), for
// a series name or a histogram's _bucket, _sum and _count series; "" when
// the metric is not pending.
func PendingWhy(name string) string {
	p := Pending()
	if why := p[name]; why != "" {
		return why
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && p[base] != "" {
			return p[base]
		}
	}
	return ""
}

// Check verifies every selector of expr against the documented metrics:
// each metric must be documented (or be a Prometheus built-in, or one of
// extra, such as the recording rules' names) and each label matched must be
// one of its documented labels, or a target label (job, instance). It
// returns one error per problem.
func Check(expr string, documented map[string]Metric, extra map[string]bool) []error {
	sels, err := Selectors(expr)
	if err != nil {
		return []error{err}
	}
	var errs []error
	for _, s := range sels {
		if Builtin(s.Metric) || Standard(s.Metric) || extra[s.Metric] {
			continue
		}
		m, ok := lookup(documented, s.Metric)
		if !ok {
			errs = append(errs, fmt.Errorf("%s is not in docs/metrics.md", s.Metric))
			continue
		}
		for _, l := range s.Labels {
			if l == "job" || l == "instance" || slices.Contains(m.Labels, l) {
				continue
			}
			if l == "le" && strings.HasSuffix(s.Metric, "_bucket") {
				continue
			}
			errs = append(errs, fmt.Errorf("%s has no label %q in docs/metrics.md (documented: %v)", s.Metric, l, m.Labels))
		}
	}
	return errs
}

// lookup finds a documented metric by its name or, for the _bucket, _sum
// and _count series of a histogram or summary, by its family's name.
func lookup(documented map[string]Metric, name string) (Metric, bool) {
	if m, ok := documented[name]; ok {
		return m, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		m, ok := documented[base]
		if ok && (m.Type == "histogram" || (m.Type == "summary" && suffix != "_bucket")) {
			return m, true
		}
	}
	return Metric{}, false
}
