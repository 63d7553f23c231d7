#!/usr/bin/env bash
# make demo: udrain's first five minutes. On a machine with only Go, it
#   1. starts (or reuses) the local control plane (hack/cluster.sh up);
#   2. builds bin/udrain and bin/udrain-demo;
#   3. runs the real LeaderWorkerSet manager v0.10.0 out of cluster (built
#      once by hack/lws.sh, cached; its CRDs and webhooks installed), creates
#      GPU nodes in three upgrade domains and a multi-host inference workload
#      (three LeaderWorkerSets of one group of four pods each, exclusive
#      topology on the domain label, leaders gated on their group's health,
#      a PodDisruptionBudget over the leaders), resetting what an earlier run
#      left, and runs "udrain readiness-gate-controller" in the background
#      until the demo ends (also on Ctrl-C; the manager too, taking its
#      webhooks with it);
#   4. shows "udrain domains" and "udrain plan" of the first domain;
#   5. rolls an upgrade over the domains with "udrain rollout".
# Run it again at will: it reuses the cluster and starts the workload anew.
# "make cluster-down" deletes the cluster.
#
# WORKLOAD=ray (make demo WORKLOAD=ray) tells the same story on a real
# KubeRay operator: it builds the operator (hack/kuberay.sh, cached; about
# 3 minutes the first time), installs its CRDs, runs it in the background
# like the gate controller, and the groups are three RayClusters (a head and
# a two-host GPU replica each; the heads under the budget). KubeRay's pods
# mount an emptyDir, so the rollout passes --delete-emptydir-data, as
# kubectl drain would need.
#
# Environment:
#   WORKLOAD               lws (default: real LeaderWorkerSets) or ray
#   UDRAIN_CLUSTER         cluster name (default udrain, as hack/cluster.sh)
#   UDRAIN_DEMO_NAMESPACE  namespace of the workload (default udrain-demo)
#   UDRAIN_DEMO_POOL       node pool, the prefix of node and domain names
#                          (default demo)
#   UDRAIN_CACHE_DIR       cache of the control plane's binaries (see
#                          hack/cluster.sh)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export GOFLAGS=${GOFLAGS:--buildvcs=false} GOWORK=off
export UDRAIN_CLUSTER=${UDRAIN_CLUSTER:-udrain}
NS=${UDRAIN_DEMO_NAMESPACE:-udrain-demo}
POOL=${UDRAIN_DEMO_POOL:-demo}
CACHE_ROOT=${UDRAIN_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/udrain}
OUT=$ROOT/_output/demo
mkdir -p "$OUT"
UDRAIN=$ROOT/bin/udrain
WORKLOAD=${WORKLOAD:-lws}
case "$WORKLOAD" in
  lws | ray) ;;
  *) printf 'demo: WORKLOAD=%s: give lws (the default) or ray\n' "$WORKLOAD" >&2; exit 2 ;;
esac
drainflags=()
[ "$WORKLOAD" = ray ] && drainflags=(--delete-emptydir-data) # KubeRay's pods mount an emptyDir

if [ -t 1 ]; then B=$'\033[1m' D=$'\033[2m' R=$'\033[0m'; else B='' D='' R=''; fi
step=0
section() { step=$((step + 1)); printf '\n%s[%d/6] %s%s\n' "$B" "$step" "$*" "$R"; }
say() { printf '  %s\n' "$*"; }
show() { printf '\n%s$ %s%s\n' "$D" "$*" "$R"; }
die() { printf '\ndemo: %s\n' "$*" >&2; exit 1; }
took() { printf '  %s(%ds)%s\n' "$D" "$((SECONDS - $1))" "$R"; }

GATE_PID=''
OPERATOR_PID=''
LWS_PID=''
HEARTBEAT_PID=''
WATCH_PID=''
cleanup() {
  local code=$?
  [ -n "$HEARTBEAT_PID" ] && kill "$HEARTBEAT_PID" 2>/dev/null
  [ -n "$WATCH_PID" ] && kill "$WATCH_PID" 2>/dev/null
  if [ -n "$GATE_PID" ] && kill -0 "$GATE_PID" 2>/dev/null; then
    kill "$GATE_PID" 2>/dev/null
    wait "$GATE_PID" 2>/dev/null || true
    printf '\n%sstopped the readiness-gate controller (its log: %s)%s\n' "$D" "${OUT#"$ROOT"/}/gate-controller.log" "$R"
  fi
  if [ -n "$OPERATOR_PID" ] && kill -0 "$OPERATOR_PID" 2>/dev/null; then
    kill "$OPERATOR_PID" 2>/dev/null
    wait "$OPERATOR_PID" 2>/dev/null || true
    printf '%sstopped the KubeRay operator (its log: %s)%s\n' "$D" "${OUT#"$ROOT"/}/ray-operator.log" "$R"
  fi
  if [ -n "$LWS_PID" ] && kill -0 "$LWS_PID" 2>/dev/null; then
    kill "$LWS_PID" 2>/dev/null
    wait "$LWS_PID" 2>/dev/null || true
    printf '%sstopped the LeaderWorkerSet manager and removed its webhooks (its log: %s)%s\n' "$D" "${OUT#"$ROOT"/}/lws-manager.log" "$R"
  fi
  exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

command -v go >/dev/null || die "make demo needs Go (1.26 or later) on PATH: https://go.dev/dl/"

start=$SECONDS
printf '%sudrain demo%s: a rolling upgrade of GPU nodes under a multi-host inference workload,\n' "$B" "$R"
printf 'one upgrade domain at a time, never breaking more than one group.\n'

# --- 1. the control plane ---------------------------------------------------
section "Local control plane (cluster $UDRAIN_CLUSTER)"
if ! compgen -G "$CACHE_ROOT/testbed/*/bin/kube-apiserver" >/dev/null; then
  say "${B}First run: building etcd, kube-apiserver, kube-controller-manager, kube-scheduler,"
  say "kubectl and kwok from source. This takes about 15 minutes on 2 cores (less on more);${R}"
  say "they are cached in $CACHE_ROOT, and later runs start the cluster in seconds."
  (
    t=0
    while sleep 60 >/dev/null 2>&1; do t=$((t + 1)); say "${D}... still building ($t min)${R}"; done
  ) &
  HEARTBEAT_PID=$!
fi
t0=$SECONDS
# cluster.sh prints `export KUBECONFIG=...` on stdout and its progress (and
# kwokctl's JSON logs) on stderr: show its own lines, log everything. A
# plain pipeline, not a process substitution: the servers kwokctl starts
# would inherit (and hold open) the substitution's pipe.
if ! hack/cluster.sh up 2>&1 >"$OUT/cluster.env" | tee "$OUT/cluster.log" | sed -un 's/^\(cluster.sh\|testbed-binaries\): /  /p'; then
  die "the control plane did not start; log: ${OUT#"$ROOT"/}/cluster.log"
fi
[ -n "$HEARTBEAT_PID" ] && { kill "$HEARTBEAT_PID" 2>/dev/null; HEARTBEAT_PID=''; }
kc=$(cat "$OUT/cluster.env")
eval "$kc"
export KUBECONFIG
took "$t0"

# --- 2. build ---------------------------------------------------------------
section "Build bin/udrain (and the demo's setup helper)"
t0=$SECONDS
say "${D}(the first build compiles client-go and friends: a few minutes; then seconds)${R}"
go build -o bin/udrain ./cmd/udrain
ln -sf udrain bin/kubectl-udrain
(cd e2e && go build -o ../bin/udrain-demo ./cmd/udrain-demo)
say "built bin/udrain: $("$UDRAIN" version 2>/dev/null | head -1)"
if [ "$WORKLOAD" = ray ]; then
  if [ ! -x "$CACHE_ROOT/kuberay/v1.5.0/ray-operator" ]; then
    say "${B}First run with WORKLOAD=ray: building the KubeRay operator from the Go module proxy"
    say "(about 3 minutes on 2 cores; cached in $CACHE_ROOT/kuberay).${R}"
  fi
  KUBERAY_DIR=$(hack/kuberay.sh 2> >(sed -u 's/^kuberay: /  /' >&2)) || die "building the KubeRay operator failed"
  say "KubeRay operator: $KUBERAY_DIR/ray-operator"
else
  if [ ! -x "$CACHE_ROOT/lws/v0.10.0/lws-manager" ]; then
    say "${B}First run: building the LeaderWorkerSet manager v0.10.0 (from the module proxy, or the source"
    say "tarball in ../shared/third_party; about 80 s on 2 cores; cached in $CACHE_ROOT/lws).${R}"
  fi
  LWS_DIR=$(hack/lws.sh 2> >(sed -u 's/^lws: /  /' >&2)) || die "building the LeaderWorkerSet manager failed"
  say "LeaderWorkerSet manager: $LWS_DIR/lws-manager"
fi
took "$t0"

# --- 3. workload --------------------------------------------------------------
if [ "$WORKLOAD" = ray ]; then
  section "GPU nodes in 3 upgrade domains, three RayClusters on the real KubeRay operator"
else
  section "GPU nodes in 3 upgrade domains, three real LeaderWorkerSets"
fi
t0=$SECONDS
if [ "$WORKLOAD" = lws ]; then
  say "starting: the LeaderWorkerSet manager v0.10.0   (in the background, until the demo ends; its webhooks on 127.0.0.1)"
  bin/udrain-demo lws-manager --lws-dir "$LWS_DIR" --work-dir "$OUT/lws" >"$OUT/lws-manager.out" 2>"$OUT/lws-manager.log" &
  LWS_PID=$!
  for _ in $(seq 1 600); do
    grep -q '^LeaderWorkerSet manager ready' "$OUT/lws-manager.out" 2>/dev/null && break
    kill -0 "$LWS_PID" 2>/dev/null || die "the LeaderWorkerSet manager stopped; log: ${OUT#"$ROOT"/}/lws-manager.log: $(tail -5 "$OUT/lws-manager.log")"
    sleep 0.1
  done
  grep -q '^LeaderWorkerSet manager ready' "$OUT/lws-manager.out" || die "the LeaderWorkerSet manager did not serve its webhooks within 60 s; log: ${OUT#"$ROOT"/}/lws-manager.log"
  say "$(cat "$OUT/lws-manager.out")"
fi
deploy=(bin/udrain-demo deploy --namespace "$NS" --pool "$POOL" --workload "$WORKLOAD")
[ "$WORKLOAD" = ray ] && deploy+=(--kuberay-dir "$KUBERAY_DIR")
"${deploy[@]}"
if [ "$WORKLOAD" = ray ]; then
  say "starting: the KubeRay operator v1.5.0   (in the background, until the demo ends; it makes the clusters' pods)"
  "$KUBERAY_DIR/ray-operator" -kubeconfig "$KUBECONFIG" -enable-leader-election=false \
    -metrics-addr 127.0.0.1:0 -health-probe-bind-address 127.0.0.1:0 \
    -feature-gates RayMultiHostIndexing=true -log-stdout-encoder console >"$OUT/ray-operator.log" 2>&1 &
  OPERATOR_PID=$!
fi
say "starting: udrain readiness-gate-controller -n $NS   (in the background, until the demo ends)"
"$UDRAIN" readiness-gate-controller -n "$NS" >"$OUT/gate-controller.log" 2>&1 &
GATE_PID=$!
say "waiting until every group is whole and its leader Ready (model loading takes 2s per pod):"
logs=${OUT#"$ROOT"/}/gate-controller.log
[ "$WORKLOAD" = ray ] && logs="$logs, ${OUT#"$ROOT"/}/ray-operator.log"
[ "$WORKLOAD" = lws ] && logs="$logs, ${OUT#"$ROOT"/}/lws-manager.log"
bin/udrain-demo wait --namespace "$NS" --workload "$WORKLOAD" --timeout 3m ||
  die "the workload did not become healthy; logs: $logs"
took "$t0"

DOMAINS=$POOL-ud0,$POOL-ud1,$POOL-ud2

# --- 4. domains ---------------------------------------------------------------
section "What udrain sees: upgrade domains, their nodes, groups and GPUs"
show "udrain domains"
"$UDRAIN" domains

# --- 5. plan ------------------------------------------------------------------
section "A plan before any action: what draining $POOL-ud0 would do"
show "udrain plan ${drainflags[*]:+${drainflags[*]} }$POOL-ud0"
"$UDRAIN" plan "${drainflags[@]}" "$POOL-ud0"

# --- 6. rollout ---------------------------------------------------------------
section "The rolling upgrade: one domain at a time, leaders first, waiting for recovery"
say "the upgrade command stands in for a node upgrade (reboot, new kubelet): 2 seconds per domain"
UPGRADE='echo "upgrading $UDRAIN_DOMAIN: $UDRAIN_NODES"; sleep 2'
show "udrain rollout --domains $DOMAINS ${drainflags[*]:+${drainflags[*]} }--upgrade-command '$UPGRADE'"
# An independent witness: a watch of the workload's pods, judged afterwards.
bin/udrain-demo watch --namespace "$NS" --pool "$POOL" --workload "$WORKLOAD" >"$OUT/watch.txt" 2>&1 &
WATCH_PID=$!
for _ in $(seq 1 100); do
  grep -q '^recording' "$OUT/watch.txt" 2>/dev/null && break
  kill -0 "$WATCH_PID" 2>/dev/null || die "the pod recorder stopped: $(cat "$OUT/watch.txt")"
  sleep 0.1
done
t0=$SECONDS
code=0
rollout=("$UDRAIN" rollout --domains "$DOMAINS" --recovery-timeout 3m "${drainflags[@]}" --upgrade-command "$UPGRADE")
if [ -t 2 ]; then
  "${rollout[@]}" || code=$? # a live view on the terminal
else
  # One line per event without a terminal: show the telling ones (leaders
  # evicted before workers, the upgrade, what recovery waits for), keep
  # every line in the log.
  say "${D}(not a terminal: the main event lines; all of them in ${OUT#"$ROOT"/}/rollout.log)${R}"
  quiet='^[0-9TZ:-]+ (RolloutStarted|Planned|Cordoned|PhaseStarted|PhaseDone|Evicting|Gone|UpgradeStarted|UpgradeDone|Uncordoned) '
  # The summary (stdout) is printed after the last event line; the
  # filter ignores Ctrl-C so that udrain can still report what it did.
  set +e
  "${rollout[@]}" 2>&1 >"$OUT/rollout-summary.txt" |
    (trap '' INT; tee "$OUT/rollout.log" | grep --line-buffered -vE "$quiet" >&2)
  code=${PIPESTATUS[0]}
  set -e
  cat "$OUT/rollout-summary.txt"
fi
if [ "$code" -eq 130 ]; then
  printf '\ndemo: interrupted; make demo starts over\n' >&2
  exit 130
fi
[ "$code" -eq 0 ] || die "udrain rollout exited $code (docs/CLI.md lists the exit codes); make demo starts over"
took "$t0"

printf '\n%sWhat the pods went through%s\n' "$B" "$R"
kill -TERM "$WATCH_PID"
wcode=0
wait "$WATCH_PID" || wcode=$?
WATCH_PID=''
grep -v '^recording' "$OUT/watch.txt" || true
[ "$wcode" -eq 0 ] || die "the recording shows the promise broken (see above)"

printf '\n%sDone in %ds.%s\n' "$B" "$((SECONDS - start))" "$R"
cat <<EOF

The cluster keeps running. To try more:
  $kc
  bin/udrain domains                       # every node upgraded by the rollout, uncordoned
  bin/udrain audit                         # the placement contract, checked
  bin/udrain readiness-gate-controller -n $NS &   # leaders' gates (the demo stopped its own)
  bin/udrain drain $POOL-ud1                # one domain by hand; then uncordon, wait-healthy
  bin/udrain --help                        # every command; docs/CLI.md
make demo starts over; make cluster-down deletes the cluster.
EOF
