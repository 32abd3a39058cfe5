package alerts

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/clockwatch/clockwatch/internal/chronydtest"
	"github.com/clockwatch/clockwatch/internal/daemontest"
	"github.com/clockwatch/clockwatch/internal/metricsdoc"
	"github.com/clockwatch/clockwatch/internal/promtest"
	"github.com/clockwatch/clockwatch/internal/testtool"
)

const migrationFile = "clockwatch.migration.rules.yml"

// chronyExporterQueries are written for chrony_exporter's and node_exporter's
// series, as a user's dashboards and alerts have them: they must run
// unchanged against clockwatch (through the migration rules, or directly on
// clockwatch's series where it shares chrony_exporter's labels) and return
// data.
var chronyExporterQueries = []string{
	`chrony_tracking_stratum >= 1`,
	`chrony_tracking_info{tracking_address!="", tracking_refid=~"[0-9A-F]{8}"}`,
	`abs(chrony_tracking_system_time_seconds) < 10`,
	`abs(chrony_tracking_last_offset_seconds)`,
	`chrony_tracking_rms_offset_seconds`,
	`chrony_tracking_frequency_ppms`,
	`chrony_tracking_residual_frequency_ppms`,
	`chrony_tracking_skew_ppms`,
	`chrony_tracking_root_delay_seconds + chrony_tracking_root_dispersion_seconds`,
	`time() - chrony_tracking_reference_timestamp_seconds`,
	`chrony_tracking_update_interval_seconds`,
	`count by (instance) (chrony_sources_state_info{source_state="sync"})`,
	`chrony_sources_state_info{source_mode="client", source_address=~"127\\.0\\.0\\.1[12]"}`,
	`max by (source_name) (abs(chrony_sources_last_sample_offset_seconds))`,
	`chrony_sources_stratum * on (instance, source_address) group_left (source_state) chrony_sources_state_info`,
	`chrony_sources_polling_interval_seconds{source_address="127.0.0.11"}`,
	`chrony_sources_last_sample_age_seconds{source_name!=""}`,
	`chrony_sources_last_sample_error_margin_seconds`,
	// The labels carry over without the rules too.
	`clockwatch_chrony_source_stratum{source_address="127.0.0.11", source_name!=""}`,
	`count by (source_state) (clockwatch_chrony_source_info)`,
	// node_exporter's timex series, as node-mixin's clock alerts read them.
	`min_over_time(node_timex_sync_status[1m]) >= 0`,
	`node_timex_maxerror_seconds >= 0`,
	`abs(node_timex_frequency_adjustment_ratio - 1) < 0.001`,
	`node_timex_offset_seconds`,
	`node_timex_estimated_error_seconds`,
	`node_timex_status`,
	`node_timex_tai_offset_seconds`,
	`node_timex_loop_time_constant`,
	`node_timex_tick_seconds > 0`,
}

// TestMigrationRulesDocumented checks every clockwatch metric the migration
// rules read against docs/metrics.md, and every rule against its table.
func TestMigrationRulesDocumented(t *testing.T) {
	t.Parallel()
	documented, err := metricsdoc.Read(metricsDocFile)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(metricsDocFile)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(migrationFile)
	if err != nil {
		t.Fatal(err)
	}
	var f ruleFile
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", migrationFile, err)
	}
	var n int
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			n++
			for _, err := range metricsdoc.Check(r.Expr, documented, nil) {
				t.Errorf("%s: %v", r.Record, err)
			}
			if !regexpRow(r.Record).Match(doc) {
				t.Errorf("%s: %s records %s, which its migration table does not list", migrationFile, metricsDocFile, r.Record)
			}
		}
	}
	if n == 0 {
		t.Fatalf("%s has no rules", migrationFile)
	}
	run(t, "promtool", "check", "rules", migrationFile)
}

// TestChronyExporterQueriesRunUnchanged runs chronyExporterQueries in a real
// Prometheus that loads the migration rules and scrapes a real clockwatch
// reading a real chronyd -x. It also moves chronyd's servers 2 s ahead and
// checks chrony_tracking_system_time_seconds has chrony_exporter's sign
// (chronyd's correction, as chronyc prints it).
func TestChronyExporterQueriesRunUnchanged(t *testing.T) {
	t.Parallel()
	testtool.Short(t)
	testtool.Require(t, "prometheus")
	c := chronydtest.Start(t, chronydtest.Options{Sources: 2})
	conf := filepath.Join(t.TempDir(), "clockwatch.yml")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("chrony:\n  address: %s\n  poll_interval: 250ms\n  timeout: 200ms\n", c.Socket)), 0o600); err != nil {
		t.Fatal(err)
	}
	cw := daemontest.Start(t, daemontest.Build(t), daemontest.Options{Args: []string{"--config.file=" + conf}})
	prom := promtest.StartPrometheus(t, promtest.PrometheusOptions{Targets: []string{cw.Addr}, RuleFiles: []string{migrationFile}})
	prom.WaitTargetsUp(t, "clockwatch", 1, 60*time.Second)
	prom.WaitVector(t, `count_over_time(node_timex_sync_status[1m]) >= 3 and on () count(chrony_sources_state_info{source_state="sync"}) >= 1 and on () count(chrony_sources_last_sample_error_margin_seconds) == 2`, 60*time.Second, promtest.NonEmpty)

	for _, q := range chronyExporterQueries {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		v, err := prom.QueryVector(ctx, q)
		cancel()
		if err != nil {
			t.Errorf("%s: %v", q, err)
		} else if len(v) == 0 {
			t.Errorf("%s returned no data", q)
		}
	}

	c.SetOffset(2 * time.Second)
	// The served +2 s shows as chronyd's correction of about +2 (positive:
	// slow) once chronyd has settled; while it converges the figure moves
	// (1.45, 2.78 were seen), so wait for it near +2 rather than compare a
	// moving value with a later chronyc.
	v := prom.WaitVector(t, `chrony_tracking_system_time_seconds > 1.5 and chrony_tracking_system_time_seconds < 2.5`, 60*time.Second, promtest.NonEmpty)
	rows, err := c.Chronyc("tracking")
	if err != nil {
		t.Fatal(err)
	}
	// chronyc -c tracking: field 4 is System time, chronyd's correction.
	if want := chronydtest.ParseFloat(t, rows[0][4]); want <= 0 || math.Abs(float64(v[0].Value)-want) > 1 {
		t.Errorf("chrony_tracking_system_time_seconds = %v, chronyc says %v: want the same sign and size", v[0].Value, want)
	}
}

// regexpRow matches the migration table's row for series name.
func regexpRow(name string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^\| ` + regexp.QuoteMeta(name) + `(\{[^|]*\})? \| clockwatch_`)
}
