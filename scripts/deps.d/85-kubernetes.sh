#!/usr/bin/env bash
# test-deps: early (needs only go; starts before apt-get, scripts/test-deps.sh)
# helm for the chart tests (deploy/helm, helm lint and helm template), pinned,
# from the Go module proxy; go install puts it in $(go env GOPATH)/bin, where
# the tests look. Safe to run again.
set -euo pipefail
version=v3.22.0
command -v go >/dev/null || { echo "85-kubernetes.sh: go is not in PATH; cannot install helm" >&2; exit 1; }
gobin=$(go env GOBIN)
[ -n "$gobin" ] || gobin="$(go env GOPATH)/bin"
if ! go version -m "$gobin/helm" 2>/dev/null | grep -Eq "^[[:space:]]+mod[[:space:]]+helm.sh/helm/v3[[:space:]]+${version}[[:space:]]"; then
	GOFLAGS=-mod=mod GOWORK=off go install "helm.sh/helm/v3/cmd/helm@$version"
fi
# promtool with Kubernetes service discovery, to check the scrape
# configuration for a cluster without the Prometheus operator
# (deploy/kubernetes/prometheus/scrape-config.yml): Debian's Prometheus is
# built without it. In a directory of its own: Debian's promtool stays the
# one in PATH.
promversion=v0.316.0
if ! go version -m "$gobin/prometheus-k8s/promtool" 2>/dev/null | grep -Eq "^[[:space:]]+mod[[:space:]]+github.com/prometheus/prometheus[[:space:]]+${promversion}[[:space:]]"; then
	GOFLAGS=-mod=mod GOWORK=off GOBIN="$gobin/prometheus-k8s" go install "github.com/prometheus/prometheus/cmd/promtool@$promversion"
fi
