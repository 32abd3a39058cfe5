#!/usr/bin/env bash
# Issue 32's isolation table: a root subscriber's drills and resumes while
# other uids flood the stepdown socket and HTTPS (test/isolation does the
# measuring). Runs as root: the floods run as uids 65534 and below, which
# need no user. Starts and stops its own processes. The split table (a
# subscriber at nice -10, the control floor) follows the first.
#
#   ./scripts/bench-isolation.sh                  # nice 0, as in a container
#   NICE=-10 ./scripts/bench-isolation.sh         # the unit's nice value
#   DRILLS=500 PHASES=baseline,connect ./scripts/bench-isolation.sh
#   (connect-elsewhere: the connect flood at a socket nobody serves, so that
#   what it costs the machine stands beside what it costs clockwatch)
#   DAEMON_ARGS=--runtime.gomaxprocs=2 ./scripts/bench-isolation.sh
#   SLOW=2ms ./scripts/bench-isolation.sh        # list the drills over 2 ms, split
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp" # the floods' uids run the harness from here
CGO_ENABLED=0 go build -trimpath -o "$tmp/clockwatch" ./cmd/clockwatch
go build -o "$tmp/isolation" ./test/isolation
"$tmp/isolation" -clockwatch "$tmp/clockwatch" -nice "${NICE:-0}" -drills "${DRILLS:-300}" \
	-phases "${PHASES:-baseline,connect,connect-elsewhere,silent,http,scrape,tls,all,baseline}" -daemon-args "${DAEMON_ARGS:-}" -slow "${SLOW:-0}"
