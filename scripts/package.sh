#!/usr/bin/env bash
# Builds clockwatch's .deb and .rpm packages into dist/ (make package).
#
# Environment (all optional):
#   VERSION   package and binary version; default scripts/version.sh: the
#             VERSION file's X.Y.Z on its vX.Y.Z tag, X.Y.Z+gitN.gSHA past it,
#             X.Y.Z~gitN.gSHA before it is tagged, .dirty for changes.
#   ARCHS     GOARCHs to build, default "amd64 arm64".
#   FORMATS   nfpm packagers, default "deb rpm".
#   DIST      output directory, default dist.
#   NFPM      the nfpm binary; installed with `go install` when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
NFPM_VERSION=v2.45.2
ARCHS=${ARCHS:-amd64 arm64}
FORMATS=${FORMATS:-deb rpm}
DIST=${DIST:-dist}

VERSION=${VERSION:-$(./scripts/version.sh)}
REVISION=$(git rev-parse HEAD 2>/dev/null || echo unknown)
BRANCH=$(git rev-parse --abbrev-ref HEAD 2>/dev/null || echo unknown)
if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then
	BUILD_DATE=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y%m%dT%H%M%SZ)
else
	BUILD_DATE=$(date -u +%Y%m%dT%H%M%SZ)
fi
LDFLAGS="-s -w \
 -X github.com/prometheus/common/version.Version=$VERSION \
 -X github.com/prometheus/common/version.Revision=$REVISION \
 -X github.com/prometheus/common/version.Branch=$BRANCH \
 -X github.com/prometheus/common/version.BuildUser=clockwatch \
 -X github.com/prometheus/common/version.BuildDate=$BUILD_DATE"

# nfpm, pinned; reused from GOBIN/GOPATH when the right version is there.
if [ -z "${NFPM:-}" ]; then
	gobin=$($GO env GOBIN)
	[ -n "$gobin" ] || gobin="$($GO env GOPATH)/bin"
	NFPM="$gobin/nfpm"
	# nfpm built by go install reports "dev" as its version; the module
	# version recorded in the binary is the reliable one.
	if ! $GO version -m "$NFPM" 2>/dev/null | grep -Eq "^[[:space:]]+mod[[:space:]]+github.com/goreleaser/nfpm/v2[[:space:]]+${NFPM_VERSION}[[:space:]]"; then
		echo "installing nfpm $NFPM_VERSION into $gobin" >&2
		$GO install "github.com/goreleaser/nfpm/v2/cmd/nfpm@$NFPM_VERSION"
	fi
fi

# nfpm.yaml reads fixed relative paths (it cannot expand variables in file
# sources), so everything it packages is staged in a private work directory
# it runs in: concurrent runs with different DIST do not collide.
DIST=$(mkdir -p "$DIST" && cd "$DIST" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/share/alerts" "$work/share/dashboards" "$work/doc/docs"
cp -r packaging systemd "$work/"
shopt -s nullglob
for f in alerts/*.yml; do cp "$f" "$work/share/alerts/"; done
for f in dashboards/*.json; do cp "$f" "$work/share/dashboards/"; done
for f in docs/*.md; do cp "$f" "$work/doc/docs/"; done
shopt -u nullglob
cp README.md "$work/doc/"
# The copyright file in Debian's machine-readable format, pointing at the
# system's copy of the licence (lintian); the rpm ships it as %license.
cat >"$work/doc/copyright" <<'COPYRIGHT'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: clockwatch
Source: https://github.com/clockwatch/clockwatch

Files: *
Copyright: 2026 The clockwatch authors
License: Apache-2.0
 Licensed under the Apache License, Version 2.0 (the "License"); you may not
 use this file except in compliance with the License. You may obtain a copy
 of the License at http://www.apache.org/licenses/LICENSE-2.0
 .
 On Debian systems, the complete text of the Apache License, Version 2.0 can
 be found in /usr/share/common-licenses/Apache-2.0.
COPYRIGHT
# The changelog: CHANGELOG.md's sections as nfpm's changelog (chglog YAML),
# which it writes as the .deb's changelog.gz and the .rpm's %changelog. The
# dates are the commits that last changed CHANGELOG.md (reproducible).
chdate=$(git log -1 --format=%cI -- CHANGELOG.md 2>/dev/null || true)
[ -n "$chdate" ] || chdate=$(date -u +%Y-%m-%dT%H:%M:%SZ)
awk -v date="$chdate" -v packager="clockwatch maintainers <clockwatch@users.noreply.github.com>" '
	function flush() { if (note != "") { gsub(/"/, "\\\"", note); print "      - note: \"" note "\""; note = "" } }
	/^## [0-9]+\.[0-9]+\.[0-9]+/ { flush(); print "- semver: " $2; print "  date: " date; print "  packager: " packager; print "  changes:"; insec = 1; next }
	/^## / { flush(); insec = 0; next }
	insec && /^- / { flush(); note = substr($0, 3); next }
	insec && /^  [^ ]/ && note != "" { sub(/^ +/, ""); note = note " " $0; next }
	{ flush() }
	END { flush() }
' CHANGELOG.md >"$work/packaging/changelog.yml"
# The .deb's changelog in Debian's format, where policy puts a native
# package's (/usr/share/doc/clockwatch/changelog.gz): nfpm's own lacks the
# distribution and is misnamed for a native package, so the .deb is built
# without nfpm's changelog. The newest section carries the package's version.
chdeb=$(date -u -R -d "$chdate" 2>/dev/null || date -u -R)
awk -v version="$VERSION" -v date="$chdeb" -v packager="clockwatch maintainers <clockwatch@users.noreply.github.com>" '
	function wrap(text, first, rest,    n, i, w, line, out) {
		n = split(text, w, " "); line = first
		for (i = 1; i <= n; i++) {
			if (length(line) + length(w[i]) + 1 > 78 && line != first && line != rest) { out = out line "\n"; line = rest }
			line = (line == first || line == rest) ? line w[i] : line " " w[i]
		}
		return out line "\n"
	}
	function flush() { if (note != "") { printf "%s", wrap(note, "  * ", "    "); note = "" } }
	function close_entry() { flush(); if (open) { print ""; print " -- " packager "  " date; print "" } open = 0 }
	/^## [0-9]+\.[0-9]+\.[0-9]+/ { close_entry(); v = $2; if (!seen++) v = version; print "clockwatch (" v ") unstable; urgency=medium"; print ""; open = 1; next }
	/^## / { close_entry(); next }
	open && /^- / { flush(); note = substr($0, 3); next }
	open && /^  [^ ]/ && note != "" { sub(/^ +/, ""); note = note " " $0; next }
	{ flush() }
	END { close_entry() }
' CHANGELOG.md | sed '$d' | gzip -9n >"$work/debdoc-changelog.gz"
# The manual page, from the command line's own definition (kingpin's
# --help-man), built for this machine whatever the package's arch.
mkdir -p "$work/man"
# NAME needs "name \- what it is" (whatis, lintian's bad-whatis-entry).
$GO run -ldflags "-X github.com/prometheus/common/version.Version=$VERSION" ./cmd/clockwatch --help-man |
	sed '/^\.SH "NAME"$/{n;s/^clockwatch$/clockwatch \\- watch this machine'"'"'s clocks and tell lock holders when they cannot be trusted/}' |
	gzip -9n >"$work/man/clockwatch.1.gz"

# The .rpm's %doc and %license entries, one per file (see nfpm.yaml).
rpmdocs=$(cd "$work" && find doc man -type f | sort | while read -r f; do
	case "$f" in
	doc/copyright) type=license ;;
	*) type=doc ;;
	esac
	case "$f" in
	man/*) dst=/usr/share/man/man1/${f#man/} ;;
	doc/copyright) dst=/usr/share/licenses/clockwatch/copyright ;;
	*) dst=/usr/share/doc/clockwatch/${f#doc/} ;;
	esac
	printf '  - src: %s\n    dst: %s\n    type: %s\n    packager: rpm\n    file_info:\n      mode: 0644\n' "$f" "$dst" "$type"
done)
awk -v docs="$rpmdocs" '$0 == "  # @rpm-docs@" { print docs; next } { print }' packaging/nfpm.yaml >"$work/packaging/nfpm.yaml"
# The .deb: no nfpm changelog (above), the Debian one in the doc tree.
mkdir -p "$work/debdoc"
cp -r "$work/doc/." "$work/debdoc/"
mv "$work/debdoc-changelog.gz" "$work/debdoc/changelog.gz"
sed -e '/^changelog: /d' -e 's|^  - src: doc$|  - src: debdoc|' "$work/packaging/nfpm.yaml" >"$work/packaging/nfpm-deb.yaml"

for arch in $ARCHS; do
	bin="$DIST/build/linux-$arch/clockwatch"
	echo "building $bin ($VERSION)" >&2
	CGO_ENABLED=0 GOOS=linux GOARCH=$arch $GO build -trimpath -ldflags "$LDFLAGS" -o "$bin" ./cmd/clockwatch
	cp "$bin" "$work/bin/clockwatch"
	for format in $FORMATS; do
		(cd "$work" && GOARCH=$arch CLOCKWATCH_VERSION=$VERSION "$NFPM" package \
			--config "packaging/nfpm$([ "$format" = deb ] && echo -deb).yaml" --packager "$format" --target "$DIST/" >&2)
	done
done
ls -l "$DIST"/clockwatch[-_]"$VERSION"[-_]* 2>/dev/null || true
