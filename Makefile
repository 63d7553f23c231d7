# udrain: the two commands a newcomer needs are `make demo` and `make test`.
# Everything else is a piece of those.

SHELL := bash
GO    ?= go
# Tests and the demo use the project's own control plane (hack/cluster.sh);
# its binaries are built from the Go module proxy and cached in
# $(UDRAIN_CACHE_DIR) (default ~/.cache/udrain), so only the first run is slow.
export GOFLAGS := -buildvcs=false
export GOWORK  := off
# Examples in Go modules of their own (so that the root module never
# requires what they import, controller-runtime above all): vetted and
# unit-tested with the rest.
EXAMPLE_MODULES := examples/controller-runtime

.PHONY: all api build test unit release-test e2e stress stress-unit stress-e2e testbed-binaries lint vet fmt-check bench demo cluster cluster-down clean image plugin

all: lint test

build:
	$(GO) build -o bin/udrain ./cmd/udrain
	ln -sf udrain bin/kubectl-udrain

## api: rewrite api/*.txt, the record of the library's exported API (one
## file per package, as Go's api/go1.*.txt), from the packages. A unit test
## (TestAPIRecorded) fails while the record and the packages differ: after
## changing the surface, or merging a branch that did, run this and commit
## the diff with a CHANGELOG line.
api:
	$(GO) test -count=1 -run '^TestAPIRecorded$$' . -update

## test: every test, unit and end-to-end (the end-to-end tests start a
## local control plane, and tear it down, by themselves).
test: lint unit release-test e2e

unit:
	$(GO) test -race -count=1 ./...
	@for m in $(EXAMPLE_MODULES); do echo "cd $$m && $(GO) test -race -count=1 ./..."; (cd $$m && $(GO) test -race -count=1 ./...) || exit 1; done

## image: udrain's OCI image (linux/amd64 and linux/arm64) as an OCI layout
## and Docker archives under _output/image, built in Go from an empty base
## (hack/release); reproducible, and a no-op when nothing changed.
image:
	cd hack/release && $(GO) run . image

## plugin: the kubectl plugin's archives and krew manifest under
## _output/plugin.
plugin:
	cd hack/release && $(GO) run . plugin

# The release artefacts' tests build them (cached in _output) and check
# them: the image's files, user and labels, udrain run from it, two builds
# giving the same digest; the krew manifest against krew's rules.
release-test:
	cd hack/release && $(GO) test -count=1 ./...

# The control plane's binaries are built (once, then cached) before the
# tests start, so that a cold run shows its progress instead of a silent
# test binary.
# Most end-to-end tests share the cluster in parallel (e2e/main_test.go
# says which do not, and why). The packages with a cluster of their own
# (e2e, e2e/nativegroups) run one after the other (-p 1): a cluster made
# while another restarts a component (the restart drills) could take the
# port that component listens on.
E2E_PARALLEL ?= 4
e2e: testbed-binaries
	cd e2e && $(GO) test -p 1 -count=1 -timeout 60m -parallel $(E2E_PARALLEL) ./...

## stress: the tests run many times, to find those that fail by chance
## (CI runs make test once): every unit test package STRESS_RUNS times (20)
## with -race, -shuffle on and -cpu 1, 2, 4 in turn, then the end-to-end
## tests STRESS_E2E_RUNS times in a row (3). It runs every round, then says
## which tests failed, how often, and with which seed (_output/stress/).
## Run it before every resolve. STRESS_PKGS=./eviction/ looks at one package.
stress: stress-unit stress-e2e

stress-unit:
	hack/stress.sh unit

stress-e2e: testbed-binaries
	hack/stress.sh e2e

# The KubeRay operator (hack/kuberay.sh) and the LeaderWorkerSet manager
# (hack/lws.sh) are testbed binaries too: the end-to-end tests of real
# RayClusters and LeaderWorkerSets run them.
testbed-binaries:
	hack/testbed-binaries.sh >/dev/null
	hack/kuberay.sh >/dev/null
	hack/lws.sh >/dev/null

lint: vet fmt-check

vet:
	$(GO) vet ./...
	cd e2e && $(GO) vet ./...
	@for m in $(EXAMPLE_MODULES); do echo "cd $$m && $(GO) vet ./..."; (cd $$m && $(GO) vet ./...) || exit 1; done
	cd hack/release && $(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

## bench: Go benchmarks of every package and the end-to-end benchmark
## harness; results in _output/bench/.
bench:
	hack/bench.sh

## demo: start (or reuse) the local control plane, deploy a multi-host
## inference workload over three upgrade domains, and roll an upgrade over
## them with live progress. WORKLOAD=ray runs the same story on three
## RayClusters of the real KubeRay operator (built once, then cached).
demo:
	hack/demo.sh

cluster:
	hack/cluster.sh up

cluster-down:
	hack/cluster.sh down

clean:
	rm -rf bin _output
