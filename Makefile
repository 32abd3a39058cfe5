GO       ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS  := -s -w \
	-X github.com/prometheus/common/version.Version=$(VERSION) \
	-X github.com/prometheus/common/version.Revision=$(REVISION) \
	-X github.com/prometheus/common/version.Branch=main \
	-X github.com/prometheus/common/version.BuildUser=clockwatch \
	-X github.com/prometheus/common/version.BuildDate=$(shell date -u +%Y%m%dT%H%M%SZ)

.PHONY: all build test test-deps unit bench fmt vet clean package test-systemd-vm

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/clockwatch ./cmd/clockwatch

## test: install what the tests need, then run every test (unit, integration, end to end).
test: test-deps
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1; }
	$(GO) test -race -count=1 -timeout 25m ./...
	./scripts/test-examples.sh

# The package test installs, upgrades and purges the .deb on this machine
# (packaging/install_test.go): make test opts in, a plain go test does not.
test: export CLOCKWATCH_PACKAGE_TEST := 1

test-deps:
	./scripts/test-deps.sh

## unit: fast tests only, no outside tools.
unit:
	$(GO) test -short ./...

## bench: Go benchmarks, then the running daemon's memory and CPU.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
	./scripts/bench-daemon.sh

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	$(GO) vet ./...

## package: .deb and .rpm for amd64 and arm64 into dist/ (scripts/package.sh; installs nfpm if missing).
package:
	GO=$(GO) ./scripts/package.sh

## test-systemd-vm: install the .deb in a Debian VM booted with systemd, then systemd-timesyncd (opt-in, ~6 min + ~1 min for the root once; test/systemdvm).
test-systemd-vm: test-deps
	CLOCKWATCH_SYSTEMD_VM_TEST=1 $(GO) test -count=1 -timeout 20m -v ./test/systemdvm

clean:
	rm -rf bin dist
