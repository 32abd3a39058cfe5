// Package sntp is clockwatch's own opinion of the clock: it queries the
// configured NTP servers directly (SNTP, with github.com/beevik/ntp), takes
// several samples of each server and keeps the one with the smallest round
// trip, whose offset is least spoiled by network delay. The offset between
// this machine's clock and an outside server is the number that catches a
// time daemon that is itself wrong.
//
// Prober is a task that queries on its own interval and keeps the last
// result per server; nothing here imports Prometheus.
package sntp
