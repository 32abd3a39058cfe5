#!/usr/bin/env bash
# The read of issue 22, item 5, side by side: stepdown/boundedtime's Now
# (with and without the VMClock marker check, and NowNanos) against AWS
# ClockBound's own Rust reader (clock-bound-shm's ShmReader +
# ClockErrorBound::now, and clock-bound-vmclock's VMClock::now, which also
# compares the device's marker), in interleaved rounds on the same segments:
# an 80-byte segment written just before each round (synchronised, void in
# 1e6 s) and a VMClock page with the same marker.
#
#   scripts/bench-boundedtime.sh CLOCK_BOUND_CHECKOUT [ROUNDS]    (15 short rounds by default)
#
# The Rust reader is built offline by scripts/clockbound-reader/build.sh from
# Debian's librust-*-dev packages (installed here if missing: libraries only,
# no service). Prints one line per measurement, then the minimum and the
# median of each (on a shared machine the minimum is the least disturbed
# sample) and the ratios Go / Rust of the minima (below 1: Go's read is
# faster).
set -euo pipefail
cd "$(dirname "$0")/.."
src=${1:?usage: bench-boundedtime.sh CLOCK_BOUND_CHECKOUT [ROUNDS]}
rounds=${2:-15}
pkgs=(librust-nix-dev librust-byteorder-dev librust-errno-dev librust-libc-dev librust-tracing-dev)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cbread=$(CLOCKBOUND_READER_DIR=$tmp/cbread bash scripts/clockbound-reader/build.sh "$src" 2>/dev/null)
(cd stepdown && go test -c -o "$tmp/bt.test" ./boundedtime)
segments() {
	/usr/bin/python3 - "$tmp" <<'PY'
import struct, sys, time
mono = time.clock_gettime_ns(getattr(time, "CLOCK_MONOTONIC_COARSE", 6))
def seg(flag, marker):
    b = bytearray(80)
    struct.pack_into("=IIIHH", b, 0, 0x414D5A4E, 0x43420200, 80, 2, 10)
    struct.pack_into("=qqqqqQIiB", b, 16, mono // 10**9, mono % 10**9, mono // 10**9 + 10**6, 0,
                     1_000_000, marker, 15_000, 1, flag)
    return bytes(b)
d = sys.argv[1]
open(d + "/shm0", "wb").write(seg(0, 0))
open(d + "/shm0-vmclock", "wb").write(seg(1, 3))
page = bytearray(4096)
struct.pack_into("<IIHBBIQ", page, 0, 0x4B4C4356, 4096, 1, 0xFF, 0, 4, 3)
open(d + "/vmclock0", "wb").write(page)
PY
}
n=3000000
for r in $(seq "$rounds"); do
	(cd stepdown/boundedtime && "$tmp/bt.test" -test.run '^$' -test.bench '^Benchmark(Now|NowVMClock|NowNanos|NowNanosVMClock|TimeNow)$' -test.benchtime 300ms) |
		awk -v r="$r" '/^Benchmark/ {sub(/-[0-9]+$/, "", $1); print "go", $1, $3, r}'
	segments
	"$cbread" --bench "$n" "$tmp/shm0" | awk -v r="$r" '{split($3, a, "="); print "rust", "ShmReader+now", a[2], r}'
	segments
	"$cbread" --bench "$n" --vmclock "$tmp/vmclock0" "$tmp/shm0-vmclock" | awk -v r="$r" '{split($3, a, "="); print "rust", "VMClock::now", a[2], r}'
done | tee "$tmp/all"
echo
awk '
{ v[$1" "$2] = v[$1" "$2] " " $3 }
END {
	for (k in v) {
		n = split(substr(v[k], 2), a, " ")
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
		med[k] = (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		lo[k] = a[1]
		printf "%-34s min %7.1f  median %7.1f ns/op over %d rounds\n", k, lo[k], med[k], n
	}
	g = "go BenchmarkNow"; gv = "go BenchmarkNowVMClock"; rs = "rust ShmReader+now"; rv = "rust VMClock::now"
	printf "ratio (minima) Now / ShmReader+now            %.2f (medians %.2f)\n", lo[g] / lo[rs], med[g] / med[rs]
	printf "ratio (minima) NowVMClock / VMClock::now      %.2f (medians %.2f)\n", lo[gv] / lo[rv], med[gv] / med[rv]
	printf "ratio (minima) NowNanosVMClock / VMClock::now %.2f (medians %.2f)\n", lo["go BenchmarkNowNanosVMClock"] / lo[rv], med["go BenchmarkNowNanosVMClock"] / med[rv]
}' "$tmp/all" | sort
