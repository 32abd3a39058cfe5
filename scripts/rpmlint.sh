#!/usr/bin/env bash
# Lints clockwatch's .rpm with rpmlint and packaging/rpmlint.toml, without
# installing it onto this machine:
#   scripts/rpmlint.sh dist/clockwatch-<version>-1.x86_64.rpm
#
# Do not run `rpmlint FILE.rpm` by hand on it: rpmlint unpacks a package with
# `rpm2cpio | cpio -id` in a temporary directory, but nfpm names the payload's
# files by absolute path (/usr/bin/clockwatch, /etc/clockwatch/...) and GNU cpio
# extracts absolute names where they say, so Debian's rpmlint 2.4 writes the
# package onto / (and lints an empty directory). Here a cpio first in PATH
# adds --no-absolute-filenames, so the files land in rpmlint's directory, and
# HOME and TMPDIR in a throwaway directory keep the rpm database and spelling
# dictionary rpmlint creates off your home. packaging/lint_test.go runs this
# script.
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 FILE.rpm..." >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
rpms=()
for f in "$@"; do
	[ -f "$f" ] || { echo "$0: $f: no such file" >&2; exit 2; }
	rpms+=("$(cd "$(dirname "$f")" && pwd)/$(basename "$f")")
done
cpio=$(command -v cpio) || { echo "$0: rpmlint unpacks with cpio, and there is none (apt-get install cpio)" >&2; exit 1; }
rpmlint=$(command -v rpmlint) || { echo "$0: no rpmlint (apt-get install rpmlint)" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/bin"
printf '#!/bin/sh\nexec %s --no-absolute-filenames "$@"\n' "$cpio" >"$dir/bin/cpio"
chmod +x "$dir/bin/cpio"
cd "$here"
PATH="$dir/bin:$PATH" HOME="$dir" TMPDIR="$dir" "$rpmlint" -c packaging/rpmlint.toml "${rpms[@]}"
