# udrain: the two commands a newcomer needs are `make demo` and `make test`.
# Everything else is a piece of those.

SHELL := bash
GO    ?= go
# Tests and the demo use the project's own control plane (hack/cluster.sh);
# its binaries are built from the Go module proxy and cached in
# $(UDRAIN_CACHE_DIR) (default ~/.cache/udrain), so only the first run is slow.
export GOFLAGS := -buildvcs=false
export GOWORK  := off

.PHONY: all build test unit e2e testbed-binaries lint vet fmt-check bench demo cluster cluster-down clean

all: lint test

build:
	$(GO) build -o bin/udrain ./cmd/udrain
	ln -sf udrain bin/kubectl-udrain

## test: every test, unit and end-to-end (the end-to-end tests start a
## local control plane, and tear it down, by themselves).
test: lint unit e2e

unit:
	$(GO) test -race -count=1 ./...

# The control plane's binaries are built (once, then cached) before the
# tests start, so that a cold run shows its progress instead of a silent
# test binary.
e2e: testbed-binaries
	cd e2e && $(GO) test -count=1 -timeout 60m ./...

testbed-binaries:
	hack/testbed-binaries.sh >/dev/null

lint: vet fmt-check

vet:
	$(GO) vet ./...
	cd e2e && $(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

## bench: Go benchmarks of every package and the end-to-end benchmark
## harness; results in _output/bench/.
bench:
	hack/bench.sh

## demo: start (or reuse) the local control plane, deploy a multi-host
## inference workload over three upgrade domains, and roll an upgrade over
## them with live progress.
demo:
	hack/demo.sh

cluster:
	hack/cluster.sh up

cluster-down:
	hack/cluster.sh down

clean:
	rm -rf bin _output
