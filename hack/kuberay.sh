#!/usr/bin/env bash
# Builds the KubeRay operator (github.com/ray-project/kuberay/ray-operator)
# from the Go module proxy and caches it with its CustomResourceDefinitions,
# keyed by version, so it is built only when missing. The end-to-end tests
# and `make demo WORKLOAD=ray` run it out of process against the local
# control plane (hack/cluster.sh).
#
# Prints the folder that holds:
#   ray-operator   the operator binary
#   crds/          ray.io_rayclusters.yaml, ray.io_rayjobs.yaml,
#                  ray.io_rayservices.yaml (the operator exits after a cache
#                  sync timeout unless all three are installed)
# Needs only Go and the module proxy.
#
# Environment:
#   UDRAIN_CACHE_DIR  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/udrain)
#   KUBERAY_VERSION   override the pinned version
set -euo pipefail

KUBERAY_VERSION=${KUBERAY_VERSION:-v1.5.0}
CACHE_ROOT=${UDRAIN_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/udrain}
DIR="$CACHE_ROOT/kuberay/$KUBERAY_VERSION"
MODULE=github.com/ray-project/kuberay/ray-operator
CRDS=(ray.io_rayclusters.yaml ray.io_rayjobs.yaml ray.io_rayservices.yaml)

log() { echo "kuberay: $*" >&2; }

have_all() {
  local c
  [ -x "$DIR/ray-operator" ] || return 1
  for c in "${CRDS[@]}"; do
    [ -s "$DIR/crds/$c" ] || return 1
  done
}

if have_all; then
  echo "$DIR"
  exit 0
fi

mkdir -p "$CACHE_ROOT/kuberay"
work=$(mktemp -d "$CACHE_ROOT/kuberay/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
export GOWORK=off GOFLAGS="${GOFLAGS:-} -mod=mod"
start=$SECONDS

# Everything is made in the temporary folder and moved into place at the
# end, so an interrupted build leaves nothing half-written in the cache.
log "building the KubeRay operator $KUBERAY_VERSION (about 3 minutes cold on 2 cores)"
GOBIN="$work/bin" go install -trimpath -ldflags "-s -w" "$MODULE@$KUBERAY_VERSION"
src=$(go mod download -json "$MODULE@$KUBERAY_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
[ -d "$src/config/crd/bases" ] || { log "no config/crd/bases in $src"; exit 1; }
mkdir -p "$work/crds"
for c in "${CRDS[@]}"; do
  cp "$src/config/crd/bases/$c" "$work/crds/$c"
done
# The module cache is read-only: make the copies writable, so that the
# cache can be removed with rm -rf.
chmod -R u+w "$work/crds"

mkdir -p "$DIR"
rm -rf "$DIR/crds"
mv "$work/crds" "$DIR/crds"
mv -f "$work/bin/ray-operator" "$DIR/ray-operator"
have_all || { log "the operator or its CRDs are still missing in $DIR"; exit 1; }
log "built in $((SECONDS - start))s into $DIR"
echo "$DIR"
