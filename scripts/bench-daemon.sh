#!/usr/bin/env bash
# Measures the running daemon: resident memory after start and after N
# scrapes, and CPU time per scrape. Starts its own clockwatch on a loopback
# port and stops it (by PID) at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${SCRAPES:-1000}
port=${PORT:-19847}
bin=$(mktemp -d)/clockwatch
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$bin" ./cmd/clockwatch
STATE_DIRECTORY=$(mktemp -d) RUNTIME_DIRECTORY=$(mktemp -d) "$bin" --web.listen-address=127.0.0.1:$port --log.level=warn &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null || true; rm -rf "$(dirname "$bin")"' EXIT
for _ in $(seq 100); do curl -fs -o /dev/null "http://127.0.0.1:$port/healthz" && break; sleep 0.05; done

rss() { awk '/^VmRSS/{print $2}' /proc/$pid/status; }
cpu_ticks() { awk '{print $14+$15}' /proc/$pid/stat; }
hz=$(getconf CLK_TCK)

sleep 2 # let the sampler settle
rss_idle=$(rss)
t0=$(cpu_ticks)
idle_window=10
sleep $idle_window
t1=$(cpu_ticks)
start=$(date +%s.%N)
for _ in $(seq "$n"); do curl -fs -o /dev/null "http://127.0.0.1:$port/metrics"; done
end=$(date +%s.%N)
t2=$(cpu_ticks)
rss_after=$(rss)

awk -v rss_idle="$rss_idle" -v rss_after="$rss_after" -v t0="$t0" -v t1="$t1" -v t2="$t2" \
	-v hz="$hz" -v n="$n" -v w="$idle_window" -v s="$start" -v e="$end" 'BEGIN {
	printf "binary size (stripped):        %.1f MiB\n", 0
	printf "RSS idle:                      %.1f MiB\n", rss_idle/1024
	printf "RSS after %d scrapes:         %.1f MiB\n", n, rss_after/1024
	printf "idle CPU:                      %.3f %% of one core\n", (t1-t0)/hz/w*100
	printf "CPU per scrape (daemon side):  %.0f µs\n", (t2-t1)/hz/n*1e6
	printf "wall per scrape (with curl):   %.2f ms\n", (e-s)/n*1000
}' | sed "s/binary size (stripped):        0.0 MiB/binary size (stripped):        $(du -m "$bin" | cut -f1) MiB ($(stat -c %s "$bin") bytes)/"
