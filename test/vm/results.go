package vm

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/clockwatch/clockwatch/test/vm/guest"
)

// Record is one result line a guest program printed with guest.Emit.
type Record struct {
	// Kind is the line's "kind" field.
	Kind string
	// JSON is the whole object, kind included.
	JSON json.RawMessage
	// Line is the line's number on the console, from 1.
	Line int
}

// Records returns the result lines on the console, in order. A line that
// starts with the prefix but does not hold one JSON object (a kernel message
// cut into it, say) is an error naming its line.
func (r *Result) Records() ([]Record, error) {
	var recs []Record
	sc := bufio.NewScanner(strings.NewReader(r.Console))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		i := strings.Index(line, guest.ResultPrefix)
		if i < 0 {
			continue
		}
		body := line[i+len(guest.ResultPrefix):]
		var head struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal([]byte(body), &head); err != nil || head.Kind == "" {
			return recs, fmt.Errorf("console line %d: bad result line %q: %v", n, line, err)
		}
		recs = append(recs, Record{Kind: head.Kind, JSON: json.RawMessage(body), Line: n})
	}
	if err := sc.Err(); err != nil {
		return recs, fmt.Errorf("reading the console: %w", err)
	}
	return recs, nil
}

// Decode returns the result lines of one kind, decoded into T, in order.
func Decode[T any](r *Result, kind string) ([]T, error) {
	recs, err := r.Records()
	if err != nil {
		return nil, err
	}
	var out []T
	for _, rec := range recs {
		if rec.Kind != kind {
			continue
		}
		var v T
		if err := rec.Decode(&v); err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, nil
}

// Decode decodes the record's JSON object into v.
func (r Record) Decode(v any) error {
	if err := json.Unmarshal(r.JSON, v); err != nil {
		return fmt.Errorf("console line %d: decoding %s result: %w", r.Line, r.Kind, err)
	}
	return nil
}

// MetricsPrefix starts the lines the guest's cw_metrics function prints:
// "CW-METRICS TAG " and one line of a Prometheus text exposition.
const MetricsPrefix = "CW-METRICS "

// Metrics parses the Prometheus text exposition the guest printed with
// cw_metrics under tag.
func (r *Result) Metrics(tag string) (map[string]*dto.MetricFamily, error) {
	prefix := MetricsPrefix + tag + " "
	var text strings.Builder
	found := false
	for _, line := range strings.Split(r.Console, "\n") {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			text.WriteString(rest)
			text.WriteByte('\n')
			found = true
		}
	}
	if !found {
		return nil, fmt.Errorf("no metrics tagged %q on the console", tag)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text.String()))
	if err != nil {
		return nil, fmt.Errorf("parsing the metrics tagged %q: %w", tag, err)
	}
	return mfs, nil
}

// Value returns the value of the one gauge, counter or untyped series of the
// named family whose labels include labels (pairs of name, value).
func Value(mfs map[string]*dto.MetricFamily, name string, labels ...string) (float64, error) {
	mf, ok := mfs[name]
	if !ok {
		return 0, fmt.Errorf("no metric %s", name)
	}
	var vals []float64
	for _, m := range mf.GetMetric() {
		if !hasLabels(m, labels) {
			continue
		}
		switch {
		case m.Gauge != nil:
			vals = append(vals, m.GetGauge().GetValue())
		case m.Counter != nil:
			vals = append(vals, m.GetCounter().GetValue())
		case m.Untyped != nil:
			vals = append(vals, m.GetUntyped().GetValue())
		}
	}
	if len(vals) != 1 {
		return 0, fmt.Errorf("%d series of %s with labels %v, want 1", len(vals), name, labels)
	}
	return vals[0], nil
}

func hasLabels(m *dto.Metric, pairs []string) bool {
	for i := 0; i+1 < len(pairs); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == pairs[i] && l.GetValue() == pairs[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}
