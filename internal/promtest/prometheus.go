package promtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	"github.com/clockwatch/clockwatch/internal/testtool"
)

// PrometheusOptions says what a test Prometheus scrapes and evaluates.
type PrometheusOptions struct {
	// Targets are host:port addresses scraped at /metrics under the job
	// Job, every Interval.
	Targets []string
	// Job is the job label of the targets; "clockwatch" when empty.
	Job string
	// RuleFiles are rule files evaluated every Interval.
	RuleFiles []string
	// Alertmanagers are host:port addresses alerts are sent to.
	Alertmanagers []string
	// Interval is the scrape and evaluation interval; 1s when zero.
	Interval time.Duration
}

// Prometheus is a running Prometheus server.
type Prometheus struct {
	// Addr is the host:port of its HTTP API.
	Addr string

	proc *process
}

// promConfig is the part of prometheus.yml the tests use.
type promConfig struct {
	Global struct {
		ScrapeInterval     string `yaml:"scrape_interval"`
		ScrapeTimeout      string `yaml:"scrape_timeout"`
		EvaluationInterval string `yaml:"evaluation_interval"`
	} `yaml:"global"`
	RuleFiles     []string        `yaml:"rule_files,omitempty"`
	Alerting      *alertingConfig `yaml:"alerting,omitempty"`
	ScrapeConfigs []scrapeConfig  `yaml:"scrape_configs"`
}

type alertingConfig struct {
	Alertmanagers []struct {
		StaticConfigs []staticConfig `yaml:"static_configs"`
	} `yaml:"alertmanagers"`
}

type scrapeConfig struct {
	JobName       string         `yaml:"job_name"`
	StaticConfigs []staticConfig `yaml:"static_configs"`
}

type staticConfig struct {
	Targets []string `yaml:"targets"`
}

// StartPrometheus runs Debian's prometheus on a free loopback port with a
// temporary data directory and waits until it is ready. It is stopped by PID
// when the test ends.
func StartPrometheus(t testing.TB, o PrometheusOptions) *Prometheus {
	t.Helper()
	bin := testtool.Require(t, "prometheus")
	if o.Interval == 0 {
		o.Interval = time.Second
	}
	if o.Job == "" {
		o.Job = "clockwatch"
	}
	var c promConfig
	iv := model.Duration(o.Interval).String()
	c.Global.ScrapeInterval, c.Global.ScrapeTimeout, c.Global.EvaluationInterval = iv, iv, iv
	for _, f := range o.RuleFiles {
		abs, err := filepath.Abs(f)
		if err != nil {
			t.Fatal(err)
		}
		c.RuleFiles = append(c.RuleFiles, abs)
	}
	if len(o.Alertmanagers) > 0 {
		c.Alerting = &alertingConfig{}
		c.Alerting.Alertmanagers = make([]struct {
			StaticConfigs []staticConfig `yaml:"static_configs"`
		}, 1)
		c.Alerting.Alertmanagers[0].StaticConfigs = []staticConfig{{Targets: o.Alertmanagers}}
	}
	c.ScrapeConfigs = []scrapeConfig{{JobName: o.Job, StaticConfigs: []staticConfig{{Targets: o.Targets}}}}
	if len(o.Targets) == 0 {
		c.ScrapeConfigs = nil
	}

	dir := t.TempDir()
	conf, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	confPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(confPath, conf, 0o600); err != nil {
		t.Fatal(err)
	}
	p, addr := startServer(t, "prometheus", bin, dir, func(addr string) []string {
		return []string{
			"--config.file=" + confPath,
			"--storage.tsdb.path=" + filepath.Join(dir, "data"),
			"--web.listen-address=" + addr,
			"--web.enable-lifecycle",
		}
	})
	return &Prometheus{Addr: addr, proc: p}
}

// Log returns the last n lines Prometheus logged.
func (p *Prometheus) Log(n int) string { return p.proc.tail(n) }

// queryResponse is the body of /api/v1/query.
type queryResponse struct {
	Status    string   `json:"status"`
	ErrorType string   `json:"errorType"`
	Error     string   `json:"error"`
	Warnings  []string `json:"warnings"`
	Data      struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	} `json:"data"`
}

// Query runs an instant query now over the HTTP API. A query Prometheus
// answers with warnings is an error too.
func (p *Prometheus) Query(ctx context.Context, expr string) (model.Value, error) {
	u := "http://" + p.Addr + "/api/v1/query?" + url.Values{"query": {expr}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("query %q: %w", expr, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("query %q: %w", expr, err)
	}
	defer resp.Body.Close()
	var r queryResponse
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, fmt.Errorf("query %q: decoding the answer (%s): %w", expr, resp.Status, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("query %q: %s: %s", expr, r.ErrorType, r.Error)
	}
	var v model.Value
	switch r.Data.ResultType {
	case "vector":
		var vec model.Vector
		err = json.Unmarshal(r.Data.Result, &vec)
		v = vec
	case "matrix":
		var m model.Matrix
		err = json.Unmarshal(r.Data.Result, &m)
		v = m
	case "scalar":
		var s model.Scalar
		err = json.Unmarshal(r.Data.Result, &s)
		v = &s
	case "string":
		var s model.String
		err = json.Unmarshal(r.Data.Result, &s)
		v = &s
	default:
		return nil, fmt.Errorf("query %q: unknown result type %q", expr, r.Data.ResultType)
	}
	if err != nil {
		return nil, fmt.Errorf("query %q: decoding the %s result: %w", expr, r.Data.ResultType, err)
	}
	if len(r.Warnings) > 0 {
		return v, fmt.Errorf("query %q: warnings: %s", expr, strings.Join(r.Warnings, "; "))
	}
	return v, nil
}

// QueryVector runs an instant query that must return an instant vector.
func (p *Prometheus) QueryVector(ctx context.Context, expr string) (model.Vector, error) {
	v, err := p.Query(ctx, expr)
	if err != nil {
		return nil, err
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("query %q: got a %s, want a vector", expr, v.Type())
	}
	return vec, nil
}

// WaitVector polls the instant query expr until ok accepts its result, and
// returns that result. It fails the test after timeout, showing the last
// result or error.
func (p *Prometheus) WaitVector(t testing.TB, expr string, timeout time.Duration, ok func(model.Vector) bool) model.Vector {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var (
		last    model.Vector
		lastErr error
	)
	for {
		qctx, qcancel := context.WithTimeout(ctx, 5*time.Second)
		last, lastErr = p.QueryVector(qctx, expr)
		qcancel()
		if lastErr == nil && ok(last) {
			return last
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waited %s for %q: last result %v, error %v", timeout, expr, last, lastErr)
			return nil
		case <-tick.C:
		}
	}
}

// NonEmpty accepts a vector with at least one sample.
func NonEmpty(v model.Vector) bool { return len(v) > 0 }

// WaitTargetsUp waits until every target of job has been scraped
// successfully.
func (p *Prometheus) WaitTargetsUp(t testing.TB, job string, n int, timeout time.Duration) {
	t.Helper()
	p.WaitVector(t, fmt.Sprintf(`up{job=%q} == 1`, job), timeout, func(v model.Vector) bool { return len(v) == n })
}
