#!/usr/bin/env bash
# Vets and tests the example modules, which `go test ./...` in the main module
# does not descend into (each is its own Go module). Called by `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each example is its own module with its own replace directives. go.work
# lists them, so that `cd examples/leader && go run ./cmd/replay` works as
# docs/incident-replay.md says (cmd/clockwatch's TestDocumentedCommands
# checks it); here each is tested as it is published: on its own.
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
