#!/usr/bin/env bash
# Builds clockwatch's container images (make image): one OCI archive per
# architecture, dist/clockwatch-image-<arch>.tar, loadable with
# `podman load -i` (or `skopeo copy oci-archive:...`), without a container
# engine, a daemon or the network (internal/ociimage).
#
# Reproducible: the binary is built with -trimpath and no VCS stamp, its build
# date and every file's time are the commit's time (SOURCE_DATE_EPOCH), so the
# same commit gives the same digests (docs/kubernetes.md, "The image").
#
# Environment (all optional):
#   VERSION            default: scripts/version.sh (VERSION, and the commits since)
#   ARCHS              default "amd64 arm64"
#   DIST               default dist
#   SOURCE_DATE_EPOCH  default: the commit's time (git log -1 --format=%ct)
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
ARCHS=${ARCHS:-amd64 arm64}
DIST=${DIST:-dist}
VERSION=${VERSION:-$(./scripts/version.sh)}
REVISION=$(git rev-parse HEAD 2>/dev/null || echo unknown)
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
export SOURCE_DATE_EPOCH
BUILD_DATE=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y%m%dT%H%M%SZ)
LDFLAGS="-s -w -buildid= \
 -X github.com/prometheus/common/version.Version=$VERSION \
 -X github.com/prometheus/common/version.Revision=$REVISION \
 -X github.com/prometheus/common/version.Branch=main \
 -X github.com/prometheus/common/version.BuildUser=clockwatch \
 -X github.com/prometheus/common/version.BuildDate=$BUILD_DATE"
# A tag may not hold "+" or "~" (a build past the release): use "-".
TAG=$(printf '%s' "$VERSION" | tr '+~' '--')

mkdir -p "$DIST"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for arch in $ARCHS; do
	CGO_ENABLED=0 GOOS=linux GOARCH=$arch $GO build -trimpath -buildvcs=false -ldflags "$LDFLAGS" \
		-o "$work/clockwatch-$arch" ./cmd/clockwatch
	$GO run ./internal/ociimage/cmd/ociimage -binary "$work/clockwatch-$arch" -arch "$arch" \
		-version "$VERSION" -revision "$REVISION" -name "clockwatch:$TAG" \
		-source https://github.com/clockwatch/clockwatch -o "$DIST/clockwatch-image-$arch.tar"
done
