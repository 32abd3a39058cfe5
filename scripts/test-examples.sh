#!/usr/bin/env bash
# Vets and tests the example modules, which `go test ./...` in the main module
# does not descend into (each is its own Go module). Called by `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each example is its own module with its own replace directives, outside
# the repository's go.work.
export GOWORK=off
for mod in examples/leader; do
	echo "== $mod"
	(
		cd "$mod"
		go vet ./...
		unformatted=$(gofmt -l .)
		if [ -n "$unformatted" ]; then
			echo "$unformatted"
			echo "gofmt: files above need formatting"
			exit 1
		fi
		go test -race -count=1 -timeout 10m ./...
	)
done
