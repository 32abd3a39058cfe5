#!/usr/bin/env bash
# Prints the version the build and the packages carry, from the VERSION file:
#   X.Y.Z            on the commit tagged vX.Y.Z (a release), clean;
#   X.Y.Z+gitN.gSHA  N commits past the vX.Y.Z tag (after the release, so
#                    dpkg and rpm upgrade from it);
#   X.Y.Z~gitN.gSHA  before vX.Y.Z is tagged (a pre-release: it sorts before
#                    X.Y.Z, so the release upgrades it), N counting the
#                    commits since VERSION last changed;
# with .dirty added for uncommitted changes. Outside git: X.Y.Z.
set -euo pipefail
cd "$(dirname "$0")/.."
base=$(tr -d ' \n' <VERSION)
if ! [[ $base =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
	echo "VERSION: want X.Y.Z, got \"$base\"" >&2
	exit 1
fi
if ! git rev-parse HEAD >/dev/null 2>&1; then
	echo "$base"
	exit 0
fi
sha=$(git rev-parse --short HEAD)
if git rev-parse -q --verify "refs/tags/v$base" >/dev/null; then
	count=$(git rev-list --count "v$base..HEAD")
	if [ "$count" = 0 ]; then v=$base; else v="$base+git$count.g$sha"; fi
else
	since=$(git log -1 --format=%H -- VERSION 2>/dev/null || true)
	if [ -n "$since" ]; then count=$(git rev-list --count "$since..HEAD"); else count=$(git rev-list --count HEAD); fi
	v="$base~git$count.g$sha"
fi
if ! git diff --quiet HEAD 2>/dev/null; then
	case "$v" in *[+~]*) v="$v.dirty" ;; *) v="$v+dirty" ;; esac
fi
echo "$v"
