#!/usr/bin/env bash
# The local control plane of the udrain testbed: a kwok cluster on kwokctl's
# binary runtime (real etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler; kwok plays the kubelets), built from source by
# hack/testbed-binaries.sh, bound to 127.0.0.1 only, with the project's kwok
# Stages and audit policy (hack/kwok/). Nothing is downloaded but Go modules.
#
# Usage: hack/cluster.sh up [-- extra kwokctl create flags]
#        hack/cluster.sh down | status | kubeconfig | start | kill COMPONENT
#        hack/cluster.sh snapshot FILE | restore FILE [etcdutl flags]
#
#   up          build the binaries if missing, then create the cluster, or
#               reuse it when it runs, is healthy and was made from the same
#               binaries, Stages, flags and config files named by the flags
#               (--config FILE, e.g. hack/kwok/kwok-bench.yaml); a stale one
#               is recreated. Prints `export KUBECONFIG=...` on stdout
#               (eval "$(hack/cluster.sh up)"), everything else on stderr.
#   down        delete the cluster and stop its processes (no-op if absent).
#   status      print the cluster's components; exit 0 only if it serves.
#   kubeconfig  print the kubeconfig path.
#   kill C      SIGKILL one component (etcd, kube-apiserver,
#               kube-controller-manager, kube-scheduler, kwok-controller), as
#               a crash would; for fault tests and demos.
#   start       start every component that is not running, wait until the
#               cluster serves again.
#   snapshot F  save etcd's state to the file F (etcdctl snapshot save).
#   restore F [ETCDUTL FLAGS]
#               restore etcd from the snapshot F the way an operator does:
#               stop the apiserver and etcd, etcdutl snapshot restore into a
#               new data dir (extra flags go to etcdutl, e.g.
#               --bump-revision 1000000000 --mark-compacted), restart the
#               controller manager and scheduler (their caches are stale)
#               and, after a restore without --mark-compacted, kwok,
#               wait until it serves.
#
# Environment:
#   UDRAIN_CLUSTER    cluster name (default udrain)
#   UDRAIN_CACHE_DIR  cache root shared with testbed-binaries.sh
#                     (default ${XDG_CACHE_HOME:-$HOME/.cache}/udrain)
#   KWOK_WORKDIR      kwokctl's work dir (default $UDRAIN_CACHE_DIR/kwok, not
#                     ~/.kwok, so a user's own kwok clusters are not touched);
#                     the cluster lives in $KWOK_WORKDIR/clusters/$UDRAIN_CLUSTER
#                     (kubeconfig.yaml, logs/ with the kube-apiserver's audit.log,
#                     pids/, kwok.yaml).
#   UDRAIN_CLUSTER_WAIT  seconds to wait for a new or restarted cluster to be
#                     usable (default 300)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE_ROOT=${UDRAIN_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/udrain}
NAME=${UDRAIN_CLUSTER:-udrain}
export KWOK_WORKDIR=${KWOK_WORKDIR:-$CACHE_ROOT/kwok}
CLUSTER_DIR=$KWOK_WORKDIR/clusters/$NAME
KUBECONFIG_PATH=$CLUSTER_DIR/kubeconfig.yaml
STAMP=$CLUSTER_DIR/udrain-testbed.stamp
BIN_RECORD=$CLUSTER_DIR/udrain-testbed.bin
CONFIG=$HERE/kwok/kwokctl.yaml
STAGES=$HERE/kwok/stages.yaml
AUDIT_POLICY=$HERE/kwok/audit-policy.yaml

log() { echo "cluster.sh: $*" >&2; }
die() { log "$*"; exit 1; }

usage() {
  sed -n '8,10p' "${BASH_SOURCE[0]}" | sed 's/^# //' >&2
  exit 2
}

# up builds the binaries if missing; down and status use the ones the
# cluster was made with (recorded at creation), so they never build.
use_bin() {
  BIN=$1
  # kwokctl runs kubectl (`kubectl get --raw /version`) to see that the
  # apiserver serves: point it at ours so it never downloads one.
  export KWOK_KUBECTL_BINARY=$BIN/kubectl
}

# 8>&- 9>&-: the servers kwokctl forks must not inherit (and hold) our
# locks.
kwokctl() { "$BIN/kwokctl" --name "$NAME" "$@" </dev/null 8>&- 9>&-; }

serves() {
  [ -f "$KUBECONFIG_PATH" ] &&
    "$BIN/kubectl" --kubeconfig "$KUBECONFIG_PATH" --request-timeout=5s get --raw /readyz >/dev/null 2>&1
}

exists() { [ -f "$CLUSTER_DIR/kwok.yaml" ]; }

# What the cluster was made from: a cluster made from other binaries,
# Stages, audit policy or flags is recreated rather than silently reused.
stamp() {
  {
    echo "$BIN"
    printf '%s\n' "$@"
    cat "$CONFIG" "$STAGES" "$AUDIT_POLICY"
    # More config files among the flags (--config FILE, --config=FILE):
    # their content too, not only their names.
    local prev="" a
    for a in "$@"; do
      case "$a" in --config=*) cat "${a#--config=}" ;; esac
      [ "$prev" = --config ] && cat "$a"
      prev=$a
    done
  } | sha256sum | cut -d' ' -f1
}

lock() {
  mkdir -p "$KWOK_WORKDIR"
  exec 9>"$KWOK_WORKDIR/$NAME.lock"
  flock 9
}

# lock_ports is held by one cluster creation at a time, across clusters,
# until its components listen: kwokctl picks each component's port as the
# highest free one below 32767, so two clusters created at once (the
# e2e packages, which `go test ./...` runs in parallel) picked the same
# ports, and one cluster's apiserver and etcd failed with "address already
# in use".
lock_ports() {
  mkdir -p "$KWOK_WORKDIR"
  exec 8>"$KWOK_WORKDIR/.ports.lock"
  flock 8
}
unlock_ports() { exec 8>&-; }

# exited_component names a component of the cluster whose process has
# exited (its pid file names no live process), if any.
exited_component() {
  local f
  for f in "$CLUSTER_DIR"/pids/*.pid; do
    [ -f "$f" ] || continue
    case $(pid_state "$(cat "$f")") in Z | gone)
      basename "$f" .pid
      return 0
      ;;
    esac
  done
  return 1
}

delete_cluster() {
  # kwokctl removes the cluster's context from --kubeconfig (default
  # ~/.kube/config, which create left alone): name the cluster's own file.
  kwokctl delete cluster --kubeconfig "$KUBECONFIG_PATH" >&2
}

# Stops whatever kwokctl could not (its binaries gone, a half-made cluster)
# and removes the cluster's folder.
remove_leftovers() {
  local f
  for f in "$CLUSTER_DIR"/pids/*.pid; do
    # kwokctl writes the pid without a newline.
    [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null || true
  done
  rm -rf "$CLUSTER_DIR"
}

# wait_usable waits until the apiserver is ready and the default
# ServiceAccount exists, up to UDRAIN_CLUSTER_WAIT seconds. On a busy 2-core
# CI machine a fresh controller manager has taken more than 60 s to make that
# ServiceAccount; when the wait runs out, what was missing and the last lines
# of the components' logs go to stderr, which the e2e tests put in their error.
wait_usable() {
  # The apiserver serves before the controller manager has made the default
  # ServiceAccount, and pods are refused until it exists.
  local limit=${UDRAIN_CLUSTER_WAIT:-300} start=$SECONDS missing="(not checked yet)"
  while [ $((SECONDS - start)) -lt "$limit" ]; do
    local gone
    if gone=$(exited_component); then
      missing="$gone, which has exited (see its log below)"
      break
    fi
    if ! serves; then
      missing="the apiserver's /readyz"
    elif ! "$BIN/kubectl" --kubeconfig "$KUBECONFIG_PATH" --request-timeout=5s \
      -n default get serviceaccount default >/dev/null 2>&1; then
      missing="the default ServiceAccount (made by kube-controller-manager)"
    else
      return 0
    fi
    sleep 0.5
  done
  log "cluster $NAME is not usable after $((SECONDS - start))s (UDRAIN_CLUSTER_WAIT=${limit}): still missing $missing"
  if [ -f "$KUBECONFIG_PATH" ]; then
    "$BIN/kubectl" --kubeconfig "$KUBECONFIG_PATH" --request-timeout=5s \
      get --raw '/readyz?verbose' 2>&1 | grep -v ' ok$' | sed 's/^/cluster.sh: readyz: /' >&2 || true
  fi
  local c
  for c in kube-controller-manager kube-apiserver etcd; do
    [ -f "$CLUSTER_DIR/logs/$c.log" ] || continue
    tail -n 8 "$CLUSTER_DIR/logs/$c.log" | sed "s/^/cluster.sh: $c: /" >&2
  done
  uptime | sed 's/^/cluster.sh: load: /' >&2 || true
  die "cluster $NAME does not serve after $((SECONDS - start))s; logs in $CLUSTER_DIR/logs"
}

up() {
  use_bin "$("$HERE/testbed-binaries.sh")"
  lock
  local want
  want=$(stamp "$@")
  if exists; then
    if [ "$(cat "$STAMP" 2>/dev/null)" != "$want" ]; then
      log "cluster $NAME was made from other binaries, Stages, audit policy or flags: recreating"
      delete_cluster
    elif serves; then
      log "reusing cluster $NAME"
      report
      return 0
    else
      log "cluster $NAME exists but does not serve: starting its components"
      kwokctl start cluster >&2 || true
      if serves; then
        wait_usable
        report
        return 0
      fi
      log "cluster $NAME still does not serve: recreating"
      delete_cluster
    fi
  fi
  if [ -d "$CLUSTER_DIR" ] && ! exists; then
    log "removing what is left of a half-made cluster $NAME"
    remove_leftovers
  fi
  lock_ports
  local start=$SECONDS
  log "creating cluster $NAME in $CLUSTER_DIR"
  if ! kwokctl create cluster \
    --config "$CONFIG" --config "$STAGES" \
    --runtime binary \
    --kubeconfig "" \
    --kube-apiserver-binary "$BIN/kube-apiserver" \
    --kube-controller-manager-binary "$BIN/kube-controller-manager" \
    --kube-scheduler-binary "$BIN/kube-scheduler" \
    --etcd-binary "$BIN/etcd" \
    --kwok-controller-binary "$BIN/kwok" \
    --kube-audit-policy "$AUDIT_POLICY" \
    --wait 2m \
    "$@" >&2; then
    log "create failed; logs in $CLUSTER_DIR/logs"
    delete_cluster || true
    exit 1
  fi
  echo "$want" >"$STAMP"
  echo "$BIN" >"$BIN_RECORD"
  wait_usable
  unlock_ports
  log "created cluster $NAME in $((SECONDS - start))s"
  report
}

report() {
  log "kubeconfig: $KUBECONFIG_PATH"
  log "kubectl:    $BIN/kubectl"
  log "logs:       $CLUSTER_DIR/logs"
  echo "export KUBECONFIG=$KUBECONFIG_PATH"
}

down() {
  lock
  if [ ! -d "$CLUSTER_DIR" ]; then
    log "no cluster $NAME"
    return 0
  fi
  if [ -x "$(cat "$BIN_RECORD" 2>/dev/null)/kwokctl" ]; then
    use_bin "$(cat "$BIN_RECORD")"
    delete_cluster || true
  fi
  remove_leftovers
  log "deleted cluster $NAME"
}

status() {
  if ! exists || [ ! -x "$(cat "$BIN_RECORD" 2>/dev/null)/kwokctl" ]; then
    log "no cluster $NAME"
    return 1
  fi
  use_bin "$(cat "$BIN_RECORD")"
  kwokctl get components >&2 || true
  if serves; then
    log "cluster $NAME serves; kubeconfig: $KUBECONFIG_PATH"
    return 0
  fi
  log "cluster $NAME does not serve"
  return 1
}

# pid_state PID: the process state (R, S, Z, ...) or "gone". A killed
# component whose parent does not reap it stays a zombie (this sandbox's
# init does not), and kwokctl takes a zombie for a running process.
pid_state() {
  local s
  s=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || true
  echo "${s:-gone}"
}

recorded_bin() {
  if ! exists || [ ! -x "$(cat "$BIN_RECORD" 2>/dev/null)/kwokctl" ]; then
    die "no cluster $NAME (hack/cluster.sh up makes it)"
  fi
  use_bin "$(cat "$BIN_RECORD")"
}

kill_component() {
  local name=${1:-} f pid i
  [ -n "$name" ] || die "kill needs a component: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok-controller"
  recorded_bin
  f=$CLUSTER_DIR/pids/$name.pid
  [ -f "$f" ] || die "no pid file $f: is $name a component of cluster $NAME?"
  pid=$(cat "$f")
  kill -9 "$pid" 2>/dev/null || true
  for i in $(seq 1 100); do
    case $(pid_state "$pid") in Z | gone) break ;; esac
    sleep 0.1
  done
  case $(pid_state "$pid") in Z | gone) ;; *) die "$name (pid $pid) is still running" ;; esac
  rm -f "$f"
  log "killed $name (pid $pid)"
}

start_components() {
  recorded_bin
  lock
  start_locked
}

# start_locked is start_components for a caller that holds the lock.
start_locked() {
  local f
  for f in "$CLUSTER_DIR"/pids/*.pid; do
    [ -f "$f" ] || continue
    case $(pid_state "$(cat "$f")") in Z | gone) rm -f "$f" ;; esac
  done
  kwokctl start cluster >&2
  wait_usable
  check_alive
  log "cluster $NAME serves"
}

# check_alive fails when a component that was started has exited since
# (a port another process took while it was down: "address already in
# use"), naming it with the end of its log, instead of leaving the tests
# to wait for what it never does.
check_alive() {
  local f name pid
  sleep 1
  for f in "$CLUSTER_DIR"/pids/*.pid; do
    [ -f "$f" ] || continue
    name=$(basename "$f" .pid)
    pid=$(cat "$f")
    case $(pid_state "$pid") in
      Z | gone)
        tail -n 5 "$CLUSTER_DIR/logs/$name.log" >&2 2>/dev/null || true
        die "$name (pid $pid) exited after its start; its log: $CLUSTER_DIR/logs/$name.log"
        ;;
    esac
  done
}

etcd_port() {
  sed -n 's/^ *etcdPort: *\([0-9][0-9]*\).*/\1/p' "$CLUSTER_DIR/kwok.yaml" | head -n 1
}

snapshot_save() {
  local file=${1:-} port
  [ -n "$file" ] || die "snapshot needs a file to write"
  recorded_bin
  port=$(etcd_port)
  [ -n "$port" ] || die "no etcdPort in $CLUSTER_DIR/kwok.yaml"
  ETCDCTL_API=3 "$BIN/etcdctl" --endpoints "127.0.0.1:$port" snapshot save "$file" >"$CLUSTER_DIR/logs/etcdctl.log" 2>&1 ||
    { tail -n 20 "$CLUSTER_DIR/logs/etcdctl.log" >&2; die "etcdctl snapshot save failed"; }
  log "saved etcd's state of cluster $NAME to $file"
}

snapshot_restore() {
  local file=${1:-} c
  [ -n "$file" ] || die "restore needs a snapshot file"
  [ -f "$file" ] || die "no snapshot file $file"
  shift
  recorded_bin
  # Under the cluster's lock: a `start` meanwhile (a test's supervisor of
  # the control plane) would start etcd on the data dir being replaced.
  lock
  for c in kube-apiserver etcd; do kill_component "$c"; done
  local data=$CLUSTER_DIR/etcd tmp=$CLUSTER_DIR/etcd-restore
  rm -rf "$tmp"
  "$BIN/etcdutl" snapshot restore "$file" --data-dir "$tmp" "$@" >"$CLUSTER_DIR/logs/etcdutl.log" 2>&1 ||
    { tail -n 20 "$CLUSTER_DIR/logs/etcdutl.log" >&2; die "etcdutl snapshot restore failed"; }
  rm -rf "$data"
  mv "$tmp" "$data"
  # The other components hold caches of the state that is gone: restart
  # them, as the restore procedure asks. kwok-controller plays the
  # kubelets, which a restore does not restart: after a restore with
  # --mark-compacted their watches are told to list again (410) and it
  # keeps running. After a plain one its watches would resume from a
  # resourceVersion the server has not reached yet, wait for it and miss
  # what came before: it is restarted too.
  local restart="kube-controller-manager kube-scheduler" restart_kwok=yes a
  for a in "$@"; do
    [ "$a" = --mark-compacted ] && restart_kwok=no
  done
  [ "$restart_kwok" = yes ] && restart="$restart kwok-controller"
  for c in $restart; do
    [ -f "$CLUSTER_DIR/pids/$c.pid" ] && kill_component "$c"
  done
  start_locked
  if [ "$restart_kwok" = yes ]; then
    # The node Leases came back with the snapshot, held by the kwok
    # process that was stopped: the new one (another holder identity; a
    # real kubelet holds its Lease as its node) would not take them before
    # they expire, and plays no pod of those nodes meanwhile. Delete them:
    # it makes its own.
    "$BIN/kubectl" --kubeconfig "$KUBECONFIG_PATH" --request-timeout=10s \
      -n kube-node-lease delete leases --all --wait=false >/dev/null
  fi
  log "restored etcd of cluster $NAME from $file"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift
case "$cmd" in
  up) up "$@" ;;
  down) down ;;
  status) status ;;
  kubeconfig) echo "$KUBECONFIG_PATH" ;;
  kill) kill_component "$@" ;;
  start) start_components ;;
  snapshot) snapshot_save "$@" ;;
  restore) snapshot_restore "$@" ;;
  *) usage ;;
esac
