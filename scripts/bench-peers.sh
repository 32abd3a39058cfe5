#!/usr/bin/env bash
# The side-by-side of issue 15: clockwatch, node_exporter (timex + time
# collectors) and, where it can be built, chrony_exporter, against one
# chronyd -x with several synchronised sources on loopback, interleaved
# (test/benchpeers does the measuring). Starts and stops its own processes.
#
#   IDLE=120s BLOCK=500 ROUNDS=3 SOURCES=8 ./scripts/bench-peers.sh
#   BEFORE=path/to/older/clockwatch ./scripts/bench-peers.sh   # also measure an older build
#   NO_STEPDOWN=1 ./scripts/bench-peers.sh   # also clockwatch with stepdown.enabled: false
#   DETAIL=0 ./scripts/bench-peers.sh   # leave out clockwatch with metrics.detail: false
#
# clockwatch runs twice by default: as configured by default, and with
# metrics.detail: false (the per-source series and HELP text left out), so
# that bytes and CPU per scrape of both stand next to node_exporter's.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${XDG_CACHE_HOME:-$HOME/.cache}/clockwatch-bench
mkdir -p "$cache"
ne_version=v1.12.1
ne=$cache/node_exporter-$ne_version
if [ ! -x "$ne" ]; then
	echo "building node_exporter $ne_version from the module proxy" >&2
	GOBIN=$cache/bin-$ne_version go install github.com/prometheus/node_exporter@$ne_version
	mv "$cache/bin-$ne_version/node_exporter" "$ne"
fi
ce=${CHRONY_EXPORTER:-}
if [ -z "$ce" ]; then
	if GOBIN=$cache/bin-ce go install github.com/superq/chrony_exporter@latest 2>"$cache/chrony_exporter.log"; then
		ce=$cache/bin-ce/chrony_exporter
	else
		echo "chrony_exporter: not measured: the module proxy refuses github.com/superq/chrony_exporter ($(tail -1 "$cache/chrony_exporter.log")); set CHRONY_EXPORTER=path to include a binary built elsewhere" >&2
	fi
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$tmp/clockwatch" ./cmd/clockwatch
go build -o "$tmp/benchpeers" ./test/benchpeers
exec_args=(-clockwatch "$tmp/clockwatch" -node-exporter "$ne" -idle "${IDLE:-120s}" -block "${BLOCK:-500}"
	-rounds "${ROUNDS:-3}" -sources "${SOURCES:-8}" -interval "${INTERVAL:-50ms}")
[ -n "${BEFORE:-}" ] && exec_args+=(-clockwatch-before "$BEFORE")
[ -n "${NO_STEPDOWN:-}" ] && exec_args+=(-no-stepdown)
[ "${DETAIL:-1}" = 0 ] || exec_args+=(-variant 'no detail=metrics:\n  detail: false')
[ -n "$ce" ] && exec_args+=(-chrony-exporter "$ce")
"$tmp/benchpeers" "${exec_args[@]}"
