#!/usr/bin/env bash
# The tests run many times, to find those that fail by chance (make stress).
# CI runs make test once; a test that fails one run in twenty makes that a
# lottery, and this is where it shows.
#
#   unit: every unit test package (the root module and EXAMPLE_MODULES),
#         STRESS_RUNS times, each round a new process per package with the
#         race detector and -shuffle on (a new order each round), GOMAXPROCS
#         taking 1, 2 and 4 in turn (-cpu).
#   e2e:  the end-to-end tests STRESS_E2E_RUNS times in a row, as make e2e
#         runs them (most of them sharing one cluster, E2E_PARALLEL at once).
#
# Every round runs, whatever failed before, so that the summary says how
# often each test failed, with the shuffle seed and -cpu to run the failing
# round again. Logs and the summary (summary.txt) are in STRESS_OUT.
#
# Usage: hack/stress.sh [unit|e2e|all]      (default all)
#
# Environment:
#   STRESS_RUNS=20        rounds of the unit tests
#   STRESS_E2E_RUNS=3     runs of the end-to-end tests
#   STRESS_PKGS=./...     the root module's packages (e.g. ./eviction/ to
#                         look at one); the example modules only with ./...
#   E2E_PARALLEL=4        end-to-end tests at once
#   STRESS_OUT=_output/stress
#   GO=go
set -uo pipefail
cd "$(dirname "$0")/.."

what=${1:-all}
runs=${STRESS_RUNS:-20}
e2e_runs=${STRESS_E2E_RUNS:-3}
pkgs=${STRESS_PKGS:-./...}
out=${STRESS_OUT:-_output/stress}
GO=${GO:-go}
export GOFLAGS=${GOFLAGS:--buildvcs=false} GOWORK=off
example_modules=$(sed -n 's/^EXAMPLE_MODULES *:= *//p' Makefile)

case $what in unit | e2e | all) ;; *)
	echo "usage: $0 [unit|e2e|all]" >&2
	exit 2
	;;
esac
mkdir -p "$out"
summary=$out/summary.txt
failed=0

# record LOG DIR: the failed tests of a go test log, one line each:
# "package test (-test.shuffle seed)"; a package that failed without a test
# failing (a panic, a timeout, a build error) as "package (no test named)".
record() {
	awk -v dir="$2" '
		/^-test.shuffle / { seed = $2 }
		/^=== RUN/ { next }
		/^ *--- FAIL: / { t = $3; fails[t] = seed; next }
		/^FAIL\t/ {
			pkg = $2; n = 0
			for (t in fails) {
				# A subtest names its failure; its parent fails with it.
				parent = 0
				for (u in fails) if (index(u, t "/") == 1) parent = 1
				if (!parent) { print pkg " " t " (-test.shuffle " fails[t] ")"; n++ }
			}
			if (n == 0) print pkg " (no test named: see the log)"
			delete fails
		}
		/^ok / { delete fails }
	' "$1" | sed "s|^|$2: |"
}

unit() {
	local cpus=(1 2 4) i cpu log rc
	rm -f "$out"/unit-*.log
	for ((i = 1; i <= runs; i++)); do
		cpu=${cpus[$(((i - 1) % 3))]}
		log=$out/unit-$i.log
		echo "== unit tests, round $i of $runs (-race -shuffle on -cpu $cpu): $log"
		rc=0
		# go test prints each package's seed with its output (-test.shuffle N).
		nice -n 10 $GO test -race -shuffle=on -count=1 -cpu "$cpu" -timeout 30m $pkgs >"$log" 2>&1 || rc=1
		if [ "$pkgs" = ./... ]; then
			for m in $example_modules; do
				(cd "$m" && nice -n 10 $GO test -race -shuffle=on -count=1 -cpu "$cpu" -timeout 30m ./...) >>"$log" 2>&1 || rc=1
			done
		fi
		if [ $rc -ne 0 ]; then
			failed=$((failed + 1))
			record "$log" "unit round $i, -cpu $cpu" | tee -a "$summary"
		fi
	done
}

e2e() {
	local i log
	rm -f "$out"/e2e-*.log
	for ((i = 1; i <= e2e_runs; i++)); do
		log=$out/e2e-$i.log
		echo "== end-to-end tests, run $i of $e2e_runs (-parallel ${E2E_PARALLEL:-4}): $log"
		if ! (cd e2e && $GO test -p 1 -count=1 -timeout 60m -parallel "${E2E_PARALLEL:-4}" ./...) >"$log" 2>&1; then
			failed=$((failed + 1))
			record "$log" "e2e run $i" | tee -a "$summary"
		fi
	done
}

: >"$summary"
case $what in
unit) unit ;;
e2e) e2e ;;
all)
	unit
	e2e
	;;
esac

if [ $failed -ne 0 ]; then
	echo "stress: $failed round(s) failed; by test (rounds failed):"
	sed 's/^[^:]*: //; s/ (-test.shuffle.*//' "$summary" | sort | uniq -c | sort -rn
	echo "(each failure with its round and seed in $summary)"
	exit 1
fi
echo "stress: every round passed ($what)"
