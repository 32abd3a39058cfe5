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
# The image is named IMAGE:TAG, by default ghcr.io/clockwatch/clockwatch:X.Y.Z
# with X.Y.Z the VERSION file's: the name and tag the kustomize base and the
# chart default to (the chart's appVersion), so that a loaded and pushed image
# is the one they run. The exact build (scripts/version.sh: X.Y.Z~gitN.gSHA
# between releases) is the image's org.opencontainers.image.version label and
# what `clockwatch version` says in it.
#
# Environment (all optional):
#   IMAGE              default ghcr.io/clockwatch/clockwatch
#   TAG                default: the VERSION file's X.Y.Z
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
IMAGE=${IMAGE:-ghcr.io/clockwatch/clockwatch}
TAG=${TAG:-$(tr -d ' \n' <VERSION)}
case $TAG in *[+~]*) echo "image.sh: TAG $TAG: a tag may not hold + or ~ (use -)" >&2; exit 2 ;; esac

mkdir -p "$DIST"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for arch in $ARCHS; do
	CGO_ENABLED=0 GOOS=linux GOARCH=$arch $GO build -trimpath -buildvcs=false -ldflags "$LDFLAGS" \
		-o "$work/clockwatch-$arch" ./cmd/clockwatch
	$GO run ./internal/ociimage/cmd/ociimage -binary "$work/clockwatch-$arch" -arch "$arch" \
		-version "$VERSION" -revision "$REVISION" -name "$IMAGE:$TAG" \
		-source https://github.com/clockwatch/clockwatch -o "$DIST/clockwatch-image-$arch.tar"
done
for arch in $ARCHS; do
	echo "$DIST/clockwatch-image-$arch.tar: $IMAGE:$TAG (build $VERSION), the image deploy/kubernetes and the chart run by default"
done
