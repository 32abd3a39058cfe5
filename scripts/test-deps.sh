#!/usr/bin/env bash
# Installs everything clockwatch's tests need on a fresh Debian machine, then
# nothing else. Each area of the project adds its own script under
# scripts/deps.d/. Safe to run again.
#
# What can overlap does (docs/performance.md, "The suite on a fresh machine"):
# a script whose first lines say "# test-deps: early" needs nothing from the
# .pkgs files (the go installs: compiling helm is the longest single step) and
# starts before apt-get; one that says "# test-deps: parallel" keeps its own
# apt state (42-vmclock.sh's private backports lists) and runs beside the
# others once the packages are in; the rest run one after another in name
# order, as before, since they share apt's lists and each other's results.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian starts services as packages install, unless policy-rc.d says no.
# chrony's service would take control of this machine's clock: never let it.
if [ ! -x /usr/sbin/policy-rc.d ] || ! grep -q 'exit 101' /usr/sbin/policy-rc.d; then
	printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
	chmod +x /usr/sbin/policy-rc.d
fi

export DEBIAN_FRONTEND=noninteractive

# lane FILE prints the script's lane: early, parallel or (none) in order.
lane() { sed -n '1,12s/^# test-deps: \([a-z]*\).*/\1/p' "$1" | head -n1; }

# Background scripts write to a log each; wait_all prints every log and fails
# naming each script that failed.
logs=$(mktemp -d)
# On any exit, the background scripts are waited for: none outlives this one.
trap 'wait; rm -rf "$logs"' EXIT
pids=()
names=()
start_bg() {
	bash "$1" >"$logs/$(basename "$1").log" 2>&1 &
	pids+=($!)
	names+=("$1")
}
wait_all() {
	local i failed=()
	for i in "${!pids[@]}"; do
		if ! wait "${pids[$i]}"; then
			failed+=("${names[$i]}")
		fi
		cat "$logs/$(basename "${names[$i]}").log"
	done
	pids=()
	names=()
	if [ ${#failed[@]} -gt 0 ]; then
		echo "test-deps.sh: failed: ${failed[*]}" >&2
		return 1
	fi
}

for f in scripts/deps.d/*.sh; do
	[ -e "$f" ] || continue
	if [ "$(lane "$f")" = early ]; then start_bg "$f"; fi
done

pkgs=()
for f in scripts/deps.d/*.pkgs; do
	[ -e "$f" ] || continue
	while read -r p _; do
		case "$p" in ''|'#'*) ;; *) pkgs+=("$p") ;; esac
	done <"$f"
done
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	apt-get update -qq -o DPkg::Lock::Timeout=300
	apt-get install -y -qq -o DPkg::Lock::Timeout=300 --no-install-recommends "${missing[@]}" >/dev/null
fi
for f in scripts/deps.d/*.sh; do
	[ -e "$f" ] || continue
	if [ "$(lane "$f")" = parallel ]; then start_bg "$f"; fi
done
seq_failed=
for f in scripts/deps.d/*.sh; do
	[ -e "$f" ] || continue
	[ -z "$(lane "$f")" ] || continue
	bash "$f" || { seq_failed=$f; break; }
done
# Every background script is waited for (and its log shown) even when a
# sequential one failed, so that none is left running.
bg_ok=1
wait_all || bg_ok=
if [ -n "$seq_failed" ]; then
	echo "test-deps.sh: failed: $seq_failed" >&2
	exit 1
fi
[ -n "$bg_ok" ]
