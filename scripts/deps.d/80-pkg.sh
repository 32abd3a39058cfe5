#!/usr/bin/env bash
# test-deps: early (needs only go; starts before apt-get, scripts/test-deps.sh)
# nfpm for scripts/package.sh and the package test, pinned; go install puts it
# in $(go env GOPATH)/bin, where package.sh looks. Safe to run again.
set -euo pipefail
version=v2.45.2
command -v go >/dev/null || { echo "80-pkg.sh: go is not in PATH; package.sh will install nfpm itself" >&2; exit 0; }
gobin=$(go env GOBIN)
[ -n "$gobin" ] || gobin="$(go env GOPATH)/bin"
if ! go version -m "$gobin/nfpm" 2>/dev/null | grep -Eq "^[[:space:]]+mod[[:space:]]+github.com/goreleaser/nfpm/v2[[:space:]]+${version}[[:space:]]"; then
	go install "github.com/goreleaser/nfpm/v2/cmd/nfpm@$version"
fi
