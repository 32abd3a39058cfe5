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
cp LICENSE "$work/doc/copyright"

for arch in $ARCHS; do
	bin="$DIST/build/linux-$arch/clockwatch"
	echo "building $bin ($VERSION)" >&2
	CGO_ENABLED=0 GOOS=linux GOARCH=$arch $GO build -trimpath -ldflags "$LDFLAGS" -o "$bin" ./cmd/clockwatch
	cp "$bin" "$work/bin/clockwatch"
	for format in $FORMATS; do
		(cd "$work" && GOARCH=$arch CLOCKWATCH_VERSION=$VERSION "$NFPM" package \
			--config packaging/nfpm.yaml --packager "$format" --target "$DIST/" >&2)
	done
done
ls -l "$DIST"/clockwatch[-_]"$VERSION"[-_]* 2>/dev/null || true
