#!/usr/bin/env bash
# Installs everything clockwatch's tests need on a fresh Debian machine, then
# nothing else. Each area of the project adds its own script under
# scripts/deps.d/; they run in name order. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian starts services as packages install, unless policy-rc.d says no.
# chrony's service would take control of this machine's clock: never let it.
if [ ! -x /usr/sbin/policy-rc.d ] || ! grep -q 'exit 101' /usr/sbin/policy-rc.d; then
	printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
	chmod +x /usr/sbin/policy-rc.d
fi

export DEBIAN_FRONTEND=noninteractive
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
	bash "$f"
done
