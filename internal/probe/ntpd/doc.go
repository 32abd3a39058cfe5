// Package ntpd reads ntpd's (ntpsec's or the reference ntpd's) system and
// peer variables over NTP mode 6 control messages on loopback, what
// `ntpq -c rv -c peers` shows, with github.com/facebook/time/ntp/control.
//
// The client sets a deadline on every request, drops replies whose
// sequence number does not match, and re-dials after any error. Poller is
// the long-running task that keeps the last result for the exporter; nothing
// here imports Prometheus. Figures are converted to clockwatch's units and
// signs: seconds, ratios, and offsets as local clock minus the reference.
package ntpd
