#!/usr/bin/env bash
# Builds the binaries of the local control plane from the Go module proxy and
# caches them, keyed by version, so they are built only when missing:
#   kube-apiserver, kube-controller-manager, kube-scheduler,
#   kubectl (kwokctl runs it to see that the apiserver serves)  (k8s.io/kubernetes)
#   etcd                                                     (go.etcd.io/etcd/server/v3)
#   etcdctl, etcdutl (snapshot save and restore, for the etcd
#   restore drill)                  (go.etcd.io/etcd/etcdctl/v3, etcdutl/v3)
#   kwok, kwokctl                                            (sigs.k8s.io/kwok)
# Prints the folder that holds them. Needs only Go and the module proxy.
#
# Environment:
#   UDRAIN_CACHE_DIR  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/udrain)
#   KUBE_VERSION, ETCD_VERSION, KWOK_VERSION  override the pinned versions
set -euo pipefail

KUBE_VERSION=${KUBE_VERSION:-v1.37.2}
ETCD_VERSION=${ETCD_VERSION:-v3.6.16}
KWOK_VERSION=${KWOK_VERSION:-v0.8.0}
CACHE_ROOT=${UDRAIN_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/udrain}
BIN="$CACHE_ROOT/testbed/kube-$KUBE_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION/bin"

log() { echo "testbed-binaries: $*" >&2; }

have_all() {
  local b
  for b in kube-apiserver kube-controller-manager kube-scheduler kubectl etcd etcdctl etcdutl kwok kwokctl; do
    [ -x "$BIN/$b" ] || return 1
  done
}

if have_all; then
  echo "$BIN"
  exit 0
fi

mkdir -p "$BIN"
work=$(mktemp -d "$CACHE_ROOT/testbed/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
export GOFLAGS="${GOFLAGS:-} -mod=mod"
export GOWORK=off
start=$SECONDS

# A build owns a temporary folder and moves each binary into place only when
# it is complete, so an interrupted build leaves no half-written binary.
install_bin() { mv -f "$1" "$BIN/$(basename "$1")"; }

build_kube() {
  local missing=() b
  for b in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
    [ -x "$BIN/$b" ] || missing+=("k8s.io/kubernetes/cmd/$b")
  done
  [ "${#missing[@]}" -gt 0 ] || return 0
  log "building Kubernetes $KUBE_VERSION: ${missing[*]##*/} (about 10 minutes cold on 2 cores)"
  local dir="$work/kube"
  mkdir -p "$dir"
  (
    cd "$dir"
    go mod init udrain.local/testbed-kube >/dev/null 2>&1
    local gomod
    gomod=$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
    local staging=${KUBE_VERSION/v1./v0.}
    # k8s.io/kubernetes replaces every staging module with ./staging/...;
    # a module that requires it must pin each of them to its release.
    {
      echo "require k8s.io/kubernetes $KUBE_VERSION"
      grep -E '^\s*k8s.io/[^ ]+ => ./staging/' "$gomod" | awk -v v="$staging" '{print "replace " $1 " => " $1 " " v}'
    } >>go.mod
    {
      printf '//go:build tools\n\npackage tools\n\nimport (\n'
      for b in "${missing[@]}"; do printf '\t_ "%s"\n' "$b"; done
      printf ')\n'
    } >tools.go
    go mod tidy >/dev/null
    local minor=${KUBE_VERSION#v1.}; minor=${minor%%.*}
    local ld="-s -w"
    for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      ld="$ld -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
    done
    mkdir -p out
    go build -trimpath -ldflags "$ld" -o out/ "${missing[@]}"
    for b in out/*; do install_bin "$b"; done
  )
}

build_etcd() {
  local missing=() b
  [ -x "$BIN/etcd" ] || missing+=(go.etcd.io/etcd/server/v3)
  [ -x "$BIN/etcdctl" ] || missing+=(go.etcd.io/etcd/etcdctl/v3)
  [ -x "$BIN/etcdutl" ] || missing+=(go.etcd.io/etcd/etcdutl/v3)
  [ "${#missing[@]}" -gt 0 ] || return 0
  log "building etcd $ETCD_VERSION: ${missing[*]}"
  local dir="$work/etcd"
  mkdir -p "$dir"
  (
    cd "$dir"
    go mod init udrain.local/testbed-etcd >/dev/null 2>&1
    {
      printf '//go:build tools\n\npackage tools\n\nimport (\n'
      for b in "${missing[@]}"; do printf '\t_ "%s"\n' "$b"; done
      printf ')\n'
    } >tools.go
    for b in "${missing[@]}"; do
      go get "$b@$ETCD_VERSION" >/dev/null 2>&1
    done
    go mod tidy >/dev/null
    mkdir -p out
    # server/v3 builds a binary named "v3"; the tools are named by go
    # build after their module (etcdctl, etcdutl).
    for b in "${missing[@]}"; do
      case "$b" in
        */server/v3) go build -trimpath -ldflags "-s -w" -o out/etcd "$b" ;;
        *) go build -trimpath -ldflags "-s -w" -o out/ "$b" ;;
      esac
    done
    for b in out/*; do install_bin "$b"; done
  )
}

build_kwok() {
  [ -x "$BIN/kwok" ] && [ -x "$BIN/kwokctl" ] && return 0
  log "building kwok and kwokctl $KWOK_VERSION"
  local dir="$work/kwok"
  mkdir -p "$dir/out"
  GOBIN="$dir/out" go install -trimpath \
    -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v} -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=${KUBE_VERSION#v}" \
    "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" "sigs.k8s.io/kwok/cmd/kwokctl@$KWOK_VERSION"
  install_bin "$dir/out/kwok"
  install_bin "$dir/out/kwokctl"
}

build_kwok
build_etcd
build_kube
have_all || { log "some binaries are still missing in $BIN"; exit 1; }
log "built in $((SECONDS - start))s into $BIN"
echo "$BIN"
