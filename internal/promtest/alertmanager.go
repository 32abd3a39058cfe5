package promtest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/clockwatch/clockwatch/internal/testtool"
)

// Alertmanager is a running Alertmanager.
type Alertmanager struct {
	// Addr is the host:port of its HTTP API, the one Prometheus sends to.
	Addr string

	proc *process
}

// WebhookConfig returns an Alertmanager configuration that sends every alert
// to url at once: grouped by alert name and instance, group_wait 0s,
// group_interval 1s (so a resolution is sent within a second), resolved
// notifications on.
func WebhookConfig(url string) string {
	return fmt.Sprintf(`route:
  receiver: webhook
  group_by: [alertname, instance]
  group_wait: 0s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: webhook
    webhook_configs:
      - url: %q
        send_resolved: true
`, url)
}

// StartAlertmanager runs Debian's prometheus-alertmanager with the given
// configuration on a free loopback port, with a temporary data directory and
// clustering off (an empty --cluster.listen-address; otherwise it binds
// 0.0.0.0:9094), and waits until it is ready. It is stopped by PID when the
// test ends.
func StartAlertmanager(t testing.TB, config string) *Alertmanager {
	t.Helper()
	bin := testtool.Require(t, "prometheus-alertmanager")
	dir := t.TempDir()
	confPath := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(confPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	p, addr := startServer(t, "alertmanager", bin, dir, func(addr string) []string {
		return []string{
			"--config.file=" + confPath,
			"--storage.path=" + filepath.Join(dir, "data"),
			"--web.listen-address=" + addr,
			"--cluster.listen-address=",
		}
	})
	return &Alertmanager{Addr: addr, proc: p}
}

// Log returns the last n lines Alertmanager logged.
func (a *Alertmanager) Log(n int) string { return a.proc.tail(n) }
