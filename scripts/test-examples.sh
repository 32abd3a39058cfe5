#!/usr/bin/env bash
# Vets and tests the example modules, which `go test ./...` in the main module
# does not descend into (each is its own Go module). Called by `make test`.
# examples/leader replays the etcd incident (≈ 35 s), examples/redislock the
# Redis Sentinel failover (seven failovers with the article's 5 s
# down-after-milliseconds: 2 min 13 s to 2 min 36 s with -race at load 21–24
# on 2 cores) and, beside it, the forward step in a qemu guest with the
# workers on the host and the peer watch (≈ 50 s with -race, load 11–15).
set -euo pipefail
cd "$(dirname "$0")/.."
# Each example is its own module with its own replace directives. go.work
# lists examples/leader, so that `cd examples/leader && go run ./cmd/replay`
# works as docs/incident-replay.md says (cmd/clockwatch's
# TestDocumentedCommands checks it); examples/redislock stays out of it, so
# that go-redis's requirements never enter the workspace's build of the
# daemon, and its commands are documented with GOWORK=off. Here each is
# tested as it is published: on its own.
export GOWORK=off
for mod in examples/leader examples/redislock; do
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
