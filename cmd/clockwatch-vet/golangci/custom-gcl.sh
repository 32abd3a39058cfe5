#!/usr/bin/env bash
# Builds a golangci-lint binary with the clockwatch module plugin, the way
# `golangci-lint custom` does, from the Go module proxy alone: `custom` clones
# golangci-lint's git repository (github.com), which machines that reach only
# the module proxy cannot; the module's zip on the proxy holds the same tree.
#   custom-gcl.sh [OUT] [VERSION]     (default: ./custom-gcl, v2.15.0)
# Then: OUT run ./... with a .golangci.yml that enables clockwatch
# (docs/audit.md). Needs Go and the module proxy; about 5 min on 2 cores.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd) # cmd/clockwatch-vet
out=$(realpath -m "${1:-custom-gcl}")
version=${2:-v2.15.0}
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
export GOWORK=off GOFLAGS=-mod=mod
src=$(go mod download -json "github.com/golangci/golangci-lint/v2@$version" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')
[ -d "$src" ] || { echo "custom-gcl.sh: golangci-lint $version not in the module cache" >&2; exit 1; }
cp -r "$src" "$work/gcl" && chmod -R u+w "$work/gcl"
cd "$work/gcl"
# What `golangci-lint custom` writes: a blank import of each plugin.
cat >cmd/golangci-lint/plugins.go <<'GO'
package main

import _ "github.com/clockwatch/clockwatch/cmd/clockwatch-vet/golangci"
GO
go mod edit -require=github.com/clockwatch/clockwatch/cmd/clockwatch-vet@v0.0.0 \
	-replace=github.com/clockwatch/clockwatch/cmd/clockwatch-vet="$here"
go mod tidy >/dev/null
go build -trimpath -o "$out" ./cmd/golangci-lint
echo "$out"
