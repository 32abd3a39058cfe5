// Package promtest runs Debian's real Prometheus and Alertmanager for
// clockwatch's integration tests: each on a free 127.0.0.1 port with its own
// temporary data directory, with short intervals (scrape and evaluation
// every second, Alertmanager's group_wait 0s) and clustering off, waited for
// by polling /-/ready and stopped by PID when the test ends. A Webhook
// records what Alertmanager sends, and Prometheus has helpers for instant
// queries over the HTTP API.
//
// The servers come from the packages in scripts/deps.d/60-alerts.pkgs; a test
// that uses them fails under CI=true and is skipped elsewhere when they are
// missing (see internal/testtool).
package promtest
