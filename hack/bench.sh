#!/usr/bin/env bash
# udrain's benchmarks in one place (make bench): the Go benchmarks of the
# packages, the bootstrap outage harness, and the end-to-end harness
# (e2e/bench: udrain beside kubectl drain on kwok clusters of its own, and a
# rollout at scale). Everything lands in _output/bench/: results.json and
# results.md (all figures), gobench.txt, bootstrap-outage.txt, logs/ (each
# scenario's drainer log, pod timeline and udrain events), runs/ (a copy of
# each run's results).
#
# Usage: hack/bench.sh [udrain-bench flags]
#   hack/bench.sh                        everything: the scale scenario at 500 nodes and
#                                        the fleet scenario in its quick mode (500 nodes in
#                                        5 domains, 63 groups of 8, 4,500 ordinary pods)
#   hack/bench.sh -quick                 the scale scenario at 100 nodes (the fleet stays quick)
#   hack/bench.sh -fleet                 the fleet scenario at issue 15's full size: 2,000
#                                        nodes in 20 domains, 250 groups of 8, 18,000 ordinary
#                                        pods (DaemonSet pods included), a spare domain of 100
#                                        nodes; about 40 minutes per mode on 2 cores
#   hack/bench.sh -run fleet -fleet      only the full fleet
#   hack/bench.sh -run fleet -fleet-modes new
#                                        the fleet in udrain's default mode only; by default
#                                        (old,new) it is rolled twice, each on a fresh cluster:
#                                        with the old behaviour (no steering taint, natural
#                                        order) and with udrain's steering and order, side by side;
#                                        strict (-fleet-modes old,new,strict) adds a third run
#                                        with pending domains tainted NoSchedule
#   hack/bench.sh -run api -repeat 5     only the API cost (one domain, 4 pods, 30 s block,
#                                        at 0 s and 3 s of termination), five times, for the p95
#                                        of the reaction to the budget freeing
#   hack/bench.sh -run api,rollout -repeat 3
#   hack/bench.sh -run none              only the Go benchmarks
# Each drainer authenticates as a ServiceAccount of its own, and its request
# count is checked against the kube-apiserver's audit log (-no-audit: not).
# (udrain-bench -h lists the flags.)
#
# Environment:
#   BENCH_GO=0        skip the Go benchmarks and the bootstrap outage harness
#   BENCHTIME, BENCH_COUNT   go test -benchtime and -count (default 1s, 1)
#   BENCH_OUT         output folder (default _output/bench)
#   UDRAIN_CACHE_DIR  where the testbed binaries are cached (hack/testbed-binaries.sh)
#
# The clusters are named udrain-bench and udrain-bench-scale (flags -cluster,
# -scale-cluster), made with hack/cluster.sh and deleted at the end, also on
# failure or interrupt; a reaper process deletes them if the harness dies.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export GOFLAGS=${GOFLAGS:--buildvcs=false}
export GOWORK=off
OUT=${BENCH_OUT:-$ROOT/_output/bench}
BENCHTIME=${BENCHTIME:-1s}
BENCH_COUNT=${BENCH_COUNT:-1}
PKGS=(./eviction ./readiness ./readiness/gate ./gpu ./bootstrap)

log() { echo "bench.sh: $*" >&2; }

mkdir -p "$OUT"
harness_args=(-out "$OUT")

runs_scenarios=1
for a in "$@"; do
  case "$a" in -run=none | none) runs_scenarios=0 ;; esac
done
if [ "$runs_scenarios" = 1 ]; then
  # The clusters need the control-plane binaries (about 10 minutes to build
  # cold on 2 cores; cached afterwards).
  log "testbed binaries: $(hack/testbed-binaries.sh)"
fi

if [ "${BENCH_GO:-1}" != 0 ]; then
  # The fleet benchmarks (eviction/fleet_bench_test.go) fill stores of up
  # to 450,000 pods: far past go test's default 10-minute limit.
  gocmd="go test -run '^\$' -bench . -benchmem -benchtime $BENCHTIME -count $BENCH_COUNT -timeout 90m ${PKGS[*]}"
  log "$gocmd"
  go test -run '^$' -bench . -benchmem -benchtime "$BENCHTIME" -count "$BENCH_COUNT" -timeout 90m "${PKGS[@]}" | tee "$OUT/gobench.txt" >&2
  log "go run ./hack/bench/bootstrap-outage -outage 30s -clients 20"
  go run ./hack/bench/bootstrap-outage -outage 30s -clients 20 | tee "$OUT/bootstrap-outage.txt" >&2
  head -n 1 "$OUT/bootstrap-outage.txt" >"$OUT/bootstrap-outage.json"
  harness_args+=(-gobench "$OUT/gobench.txt" -gobench-cmd "$gocmd" -outage "$OUT/bootstrap-outage.json")
fi

log "building the harness (e2e/bench/cmd/udrain-bench)"
(cd e2e && go build -o "$OUT/udrain-bench" ./bench/cmd/udrain-bench)

export UDRAIN_BENCH_COMMAND="hack/bench.sh${*:+ $*}"
if commit=$(git rev-parse --short HEAD 2>/dev/null); then
  git diff --quiet HEAD 2>/dev/null || commit+="-dirty"
  export UDRAIN_BENCH_COMMIT=$commit
fi
status=0
"$OUT/udrain-bench" "${harness_args[@]}" "$@" || status=$?
log "results: $OUT/results.md and $OUT/results.json"
exit "$status"
