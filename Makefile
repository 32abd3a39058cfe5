GO       ?= go
VERSION  ?= $(shell ./scripts/version.sh)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS  := -s -w \
	-X github.com/prometheus/common/version.Version=$(VERSION) \
	-X github.com/prometheus/common/version.Revision=$(REVISION) \
	-X github.com/prometheus/common/version.Branch=main \
	-X github.com/prometheus/common/version.BuildUser=clockwatch \
	-X github.com/prometheus/common/version.BuildDate=$(shell date -u +%Y%m%dT%H%M%SZ)

.PHONY: release all build test test-redis test-load test-deps test-faults unit bench bench-peers fmt vet clean package test-systemd-vm mixin image test-kubernetes test-kubelet test-audit javac-plugin audit-real

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/clockwatch ./cmd/clockwatch

## test: install what the tests need, then run every test (unit, integration, end to end).
test: test-deps
	$(GO) vet ./... ./stepdown/...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1; }
	# Three lanes side by side: test/vm's short guests then the package under systemd in one, its two
	# three-minute soaks then the examples in another, everything else in the third (docs/performance.md,
	# "The suite on a fresh machine"). Each lane's output is printed whole when it ends.
	$(MAKE) --no-print-directory -j3 --output-sync=target test-lane-vm test-lane-soak test-lane-host
	# TestPushUnderLoadInVM measures latency: it runs last, alone on the machine.
	$(MAKE) test-load

## test-build: vet, gofmt, and every package make test tests compiled with its tests (go list -export
## -test -deps: compiled, not linked, not run), in each of its modules, with -race where make test uses it.
## Not part of make test: measured before the lanes with empty Go caches it took 4.2-5.5 min and shortened
## no lane (docs/performance.md); on a fresh machine `make -j2 test-deps test-build` overlaps it with apt.
.PHONY: test-build
test-build:
	$(GO) vet ./... ./stepdown/...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1; }
	$(GO) list -export -test -deps -race ./... ./stepdown/... >/dev/null
	cd stepdown && GOWORK=off $(GO) list -export -test -deps ./... >/dev/null
	cd test/kubeapiserver && GOWORK=off $(GO) list -export -test -deps ./manifests >/dev/null
	cd cmd/clockwatch-vet && GOWORK=off $(GO) vet ./... && GOWORK=off $(GO) list -export -test -deps -race ./... >/dev/null
	for mod in examples/leader examples/redislock; do \
		(cd $$mod && GOWORK=off $(GO) vet ./... && GOWORK=off $(GO) list -export -test -deps -race ./... >/dev/null) || exit 1; \
	done

# test/vm's two soaks: a guest watched for three minutes in which nothing may happen (chronyd without
# rtcsync; a VMClock guest before its moves). Each keeps a guest half busy (≈ 0.5 core under TCG) while
# it waits, so they run in a lane of their own beside the short guests.
VM_SOAKS := TestChronydWithoutRTCSync|TestVMClockMigrationInVM

# The lane of the short qemu boots: test/vm's guests but the soaks and the push under load (7.3 min), then
# the package under a real systemd in a Debian VM, timesyncd's real daemon included (5.9 min beside the soaks, + ≈ 1 min
# for the Debian root the first time on a machine: cached in /var/cache/clockwatch-test by mkroot.sh's
# hash).
.PHONY: test-lane-vm test-lane-soak test-lane-host
test-lane-vm:
	$(GO) test -race -count=1 -timeout 25m -skip '^(TestPushUnderLoadInVM|$(VM_SOAKS))$$' ./test/vm
	$(MAKE) --no-print-directory test-systemd-vm

# The soaks (9.4 min beside the other lanes), then the examples (≈ 3 min: the Redis replay, whose forward step boots one short
# guest; its failover runs judge the workers that take the lock after the job: examples/redislock).
test-lane-soak:
	$(GO) test -race -count=1 -timeout 25m -run '^($(VM_SOAKS))$$' ./test/vm
	./scripts/test-examples.sh

# The host lane: every other package, the Go client module on its own, the fault suite, the manifests and
# the audit tools.
test-lane-host:
	$(GO) test -race -count=1 -timeout 25m $$($(GO) list ./... ./stepdown/... | grep -v '/test/vm$$')
	# The Go client module on its own, as an application gets it (no workspace).
	cd stepdown && GOWORK=off $(GO) test -count=1 ./...
	$(MAKE) --no-print-directory test-faults
	# The Kubernetes manifests and chart rendered and decoded strictly into k8s.io/api's types, in
	# their own module (k8s.io/* never enters the daemon's build list; test/kubeapiserver).
	cd test/kubeapiserver && GOWORK=off $(GO) test -count=1 ./manifests
	$(MAKE) --no-print-directory test-audit

# The package test builds the packages and installs, upgrades and purges the
# .deb in a throwaway root (an overlay of / in a private mount namespace), never
# on this machine itself (packaging/install_test.go): it is slow, so make test
# opts in and a plain go test does not.
test: export CLOCKWATCH_PACKAGE_TEST := 1

# The fault suite's packages and tests (docs/step-detection.md, "Fault suite").
# Issue 32's files that cannot crash or hang the daemon: the VMClock page, the clockbound segment and its Go
# reader, the Kubernetes client, host-dirs, the configuration and the daemon's FIFO cases (cmd/clockwatch).
FAULT_PKGS  := ./internal/journal ./internal/config ./internal/step ./internal/trace ./internal/transport/socket ./internal/daemon ./internal/probe/ntpd ./internal/probe/chrony ./internal/timesource ./internal/loop ./internal/safefile ./internal/verdicttest ./internal/policy ./internal/probe/vmclock ./internal/clockbound ./internal/transport/segment ./stepdown/boundedtime ./internal/kubernetes ./internal/transport/kubernetes ./cmd/clockwatch
FAULT_TESTS := ReaderErrors|Crash|Corrupt|BootIncrement|BoundsLine|Bounded|Floor|Huge|BadConfigs|SinceLastRun|Admission|DrillHold|Abuse|Listen|HTTP|Landing|FailedStart|Unpersisted|Durable|Reload|Nonsense|Figures|WrappedBound|SlowNtpd|ManyAssociations|ExactKeys|Backoff|PollRate|HostileState|OpenRefuses|LogFlood|FragmentFlood|Verdict|Kubeconfig|HostDirs

## test-faults: the fault suite at full size: a crash at every durable write with real fsync, 20,000 socket
## connect cycles, 5,000 subscribers, 1,100 idle HTTP connections and the read-header timeout (38 s measured).
## Its fast parts run in every go test; make test runs this too.
test-faults:
	CLOCKWATCH_FAULTS=1 $(GO) test -race -count=1 -timeout 10m -run '$(FAULT_TESTS)' $(FAULT_PKGS)

test-deps:
	./scripts/test-deps.sh

## test-redis: the Redis Sentinel failover replay alone (examples/redislock; docs/incident-replay.md): a real master,
## two replicas, three Sentinels and PostgreSQL, seven failovers (2–2.5 min), and the forward step in a qemu guest (≈ 40–60 s);
## make test runs both via scripts/test-examples.sh.
test-redis: test-deps
	cd examples/redislock && GOWORK=off $(GO) test -count=1 -timeout 10m -v ./...

## test-load: the stepdown's push with the qemu VM's vCPU saturated (issue 25; docs/performance.md), alone on
## the machine so that nothing else deschedules the VM.
test-load:
	$(GO) test -count=1 -timeout 10m -run '^TestPushUnderLoadInVM$$' -v ./test/vm

## test-audit: the wall-clock audit tools (docs/audit.md): clockwatch-vet is its own module so that
## golang.org/x/tools stays out of the daemon's and the client's go.mod; it must find nothing in clockwatch.
## Its tests include TestDocsCommands: the commands of docs/audit.md from a fresh clone (about 3 min).
test-audit:
	cd cmd/clockwatch-vet && GOWORK=off $(GO) vet ./... && GOWORK=off $(GO) test -race -count=1 -timeout 30m ./...
	cd cmd/clockwatch-vet && GOWORK=off $(GO) build -o ../../bin/clockwatch-vet .
	./bin/clockwatch-vet ./... ./stepdown/...
	./tools/javac-wallclock/build.sh test

## javac-plugin: the WallClock javac plugin, JDK only, into dist/clockwatch-wallclock.jar.
javac-plugin:
	./tools/javac-wallclock/build.sh

## audit-real: both tools on the real code bases of docs/audit.md (module proxy, Debian sources; ~15 min),
## the suggested fixes applied to the corpus (built, vetted, tests before and after), and the golangci-lint
## commands of docs/audit.md (golangci-lint built from the module proxy: ~6 min).
audit-real:
	./scripts/audit-real.sh
	./scripts/audit-real.sh fix
	cd cmd/clockwatch-vet && CLOCKWATCH_DOCS_SLOW=1 GOWORK=off $(GO) test -count=1 -timeout 60m -run '^TestDocsCommands$$' -v .

## unit: fast tests only, no outside tools.
unit:
	$(GO) test -short ./... ./stepdown/...

## bench: Go benchmarks, then the running daemon's memory and CPU.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./... ./stepdown/...
	./scripts/bench-daemon.sh

## bench-isolation: a root subscriber's events while other uids flood the stepdown socket and HTTPS
## (scripts/bench-isolation.sh; as root).
.PHONY: bench-isolation
bench-isolation:
	./scripts/bench-isolation.sh

## bench-peers: clockwatch beside node_exporter (and chrony_exporter) against one chronyd -x, interleaved (scripts/bench-peers.sh).
bench-peers:
	./scripts/bench-peers.sh

## release: check that VERSION, the two modules' go.mod and CHANGELOG.md agree, and print the tags to push (scripts/release.sh).
release:
	./scripts/release.sh

## mixin: regenerate alerts/clockwatch.rules.yml, dashboards/clockwatch.json, the Kubernetes copies and the chart's files and values.yaml mixin: block from mixin/.
mixin:
	$(GO) run ./mixin/cmd/mixin -out .

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	$(GO) vet ./... ./stepdown/...
	cd cmd/clockwatch-vet && GOWORK=off $(GO) vet ./...

## package: .deb and .rpm for amd64 and arm64 into dist/ (scripts/package.sh; installs nfpm if missing).
package:
	GO=$(GO) ./scripts/package.sh

## image: OCI image archives for amd64 and arm64, dist/clockwatch-image-<arch>.tar (podman load -i), without a container engine, reproducible (scripts/image.sh).
image:
	GO=$(GO) ./scripts/image.sh

## test-kubernetes: a real kube-apiserver (built from k8s.io/kubernetes) with Debian's etcd: the manifests dry-run, and clockwatch as the ServiceAccount setting the Node condition and posting Events (opt-in; time in docs/kubernetes.md).
test-kubernetes: test-deps
	cd test/kubeapiserver && GOWORK=off CLOCKWATCH_KUBE_APISERVER_TEST=1 $(GO) test -count=1 -timeout 30m -v ./...

## test-kubelet: the DaemonSet on a real kubelet: Debian's containerd and the kubelet (built from k8s.io/kubernetes)
## in a Debian VM with systemd (qemu), the control plane on the host's loopback (opt-in, never in make test;
## time and what stops it in docs/kubernetes.md).
test-kubelet: test-deps
	cd test/kubeapiserver && GOWORK=off CLOCKWATCH_KUBELET_TEST=1 $(GO) test -count=1 -timeout 60m -v -run '^TestKubelet$$' ./apiserver

## test-systemd-vm: install the .deb in a Debian VM booted with systemd, then systemd-timesyncd (~6 min + ~1 min for the root once; test/systemdvm; make test runs it).
test-systemd-vm: test-deps
	CLOCKWATCH_SYSTEMD_VM_TEST=1 $(GO) test -count=1 -timeout 20m -v ./test/systemdvm

## test-power-cuts: issue 25's twenty real power cuts (qemu killed, the state directory on an ext4 virtio
## disk; 5–6 min at host load 15; make test runs two).
.PHONY: test-power-cuts
test-power-cuts: test-deps
	CLOCKWATCH_POWER_CUTS=20 $(GO) test -count=1 -timeout 20m -v -run TestPowerCutsInVM ./test/vm

clean:
	rm -rf bin dist
