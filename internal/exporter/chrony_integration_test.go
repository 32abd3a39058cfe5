package exporter

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/clockwatch/clockwatch/internal/chronydtest"
	"github.com/clockwatch/clockwatch/internal/probe/chrony"
	"github.com/clockwatch/clockwatch/internal/testtool"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape fetches /metrics and returns the value of each unlabelled series
// and of labelled ones as name{labels}.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scraping: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("scrape status %d: %s", resp.StatusCode, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			key := name
			if len(m.GetLabel()) > 0 {
				var ls []string
				for _, l := range m.GetLabel() {
					ls = append(ls, l.GetName()+"="+l.GetValue())
				}
				key += "{" + strings.Join(ls, ",") + "}"
			}
			switch {
			case m.GetGauge() != nil:
				out[key] = m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				out[key] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// TestChronyMetricsFollowChronyd runs the poller as a task against a real
// chronyd and scrapes /metrics over HTTP while chronyd's source moves, and
// while chronyd is killed and restarted.
func TestChronyMetricsFollowChronyd(t *testing.T) {
	testtool.Short(t)
	t.Parallel()
	c := chronydtest.Start(t, chronydtest.Options{Sources: 1})
	cfg := chrony.DefaultConfig()
	cfg.Address = c.Socket
	cfg.ConfPath = c.Conf
	cfg.PollInterval = 50 * time.Millisecond
	cfg.Timeout = 50 * time.Millisecond
	poller := chrony.NewPoller(cfg, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- poller.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("poller: %v", err)
		}
	}()
	reg, err := NewPedanticRegistry(NewScraper(slog.New(slog.DiscardHandler), NewChronyUpdater(poller)))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(MetricsHandler(reg, nil))
	defer srv.Close()

	until := func(what string, cond func(m map[string]float64) string) map[string]float64 {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			m := scrape(t, srv.URL)
			why := cond(m)
			if why == "" {
				return m
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 10s: %s", what, why)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, step := range []struct {
		offset time.Duration
		want   float64
	}{{2 * time.Second, -2}, {-3 * time.Second, 3}} {
		c.SetOffset(step.offset)
		until(fmt.Sprintf("metrics follow a server %v off", step.offset), func(m map[string]float64) string {
			got := m[MetricChronySystemOffset]
			switch {
			case m["clockwatch_chrony_up"] != 1:
				return "clockwatch_chrony_up is not 1"
			case m[MetricChronyLeapStatus] != 0 || m[MetricChronySynchronized] != 1:
				return fmt.Sprintf("leap status %v, synchronized %v", m[MetricChronyLeapStatus], m[MetricChronySynchronized])
			case m[MetricChronySourceInfo+"{source_address=127.0.0.11,source_mode=client,source_name=127.0.0.11,source_state=sync}"] != 1:
				return "the source is not in state sync"
			case math.Abs(got-step.want) > 0.05:
				return fmt.Sprintf("system offset %v, want about %v", got, step.want)
			}
			// The exported value is the poller's last snapshot; chronyc
			// reads chronyd now.
			rows, err := c.Chronyc("tracking")
			if err != nil {
				return err.Error()
			}
			ref := -chronydtest.ParseFloat(t, rows[0][4])
			if d := math.Abs(ref - got); d > 0.010 {
				return fmt.Sprintf("exported offset %v is %v from chronyc's %v", got, d, ref)
			}
			return ""
		})
	}

	c.Stop()
	m := until("up drops when chronyd is killed", func(m map[string]float64) string {
		if m["clockwatch_chrony_up"] != 0 {
			return "clockwatch_chrony_up is still 1"
		}
		return ""
	})
	if _, ok := m[MetricChronySystemOffset]; ok {
		t.Errorf("stale system offset exported while chronyd is down")
	}
	if m[MetricChronyPollAge] <= 0 {
		t.Errorf("%s = %v while chronyd is down, want the age of the last data", MetricChronyPollAge, m[MetricChronyPollAge])
	}
	c.Restart()
	until("up recovers after chronyd restarts", func(m map[string]float64) string {
		if m["clockwatch_chrony_up"] != 1 {
			return "clockwatch_chrony_up is still 0"
		}
		return ""
	})
}
