#!/usr/bin/env bash
# Builds the LeaderWorkerSet manager (sigs.k8s.io/lws, ./cmd) and caches it
# with the manifests the testbed installs, keyed by version, so it is built
# only when missing. The end-to-end tests and `make demo` run it out of
# process against the local control plane (hack/cluster.sh), as they run
# KubeRay's operator (hack/kuberay.sh).
#
# Prints the folder that holds:
#   lws-manager    the manager binary
#   crds/          the CRDs of config/crd/bases (LeaderWorkerSet and the two
#                  DisaggregatedSet ones: the manager runs their controllers
#                  too, and its cache waits for every kind it watches)
#   rbac/role.yaml the ClusterRole the manager runs with in a real cluster
#   webhook/       config/webhook as it is: manifests.yaml and the kustomization
#                  whose patches (mutating-patch.yaml, validating-patch.yaml)
#                  give the pod webhooks their objectSelector
#
# Where the source comes from: the Go module proxy, if it serves
# sigs.k8s.io/lws at the version; else the source tarball
# lws-$LWS_VERSION-src.tar.gz in ../shared/third_party/ from the
# repository's root (or $LWS_SRC_TARBALL), whose sha256 must be the one
# pinned here. Every dependency comes from the module proxy. About 80 s cold
# on 2 cores with a warm module cache, 3-4 minutes with a cold one.
#
# Environment:
#   UDRAIN_CACHE_DIR  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/udrain)
#   LWS_VERSION       override the pinned version (a tarball of another
#                     version needs LWS_SRC_SHA256 too)
#   LWS_SRC_TARBALL   the source tarball to fall back to
#   LWS_SRC_SHA256    its expected sha256
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
LWS_VERSION=${LWS_VERSION:-v0.10.0}
CACHE_ROOT=${UDRAIN_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/udrain}
DIR="$CACHE_ROOT/lws/$LWS_VERSION"
MODULE=sigs.k8s.io/lws
TARBALL=${LWS_SRC_TARBALL:-$ROOT/../shared/third_party/lws-$LWS_VERSION-src.tar.gz}
# GitHub kubernetes-sigs/lws, tag v0.10.0, commit
# 2161f38ff333f9e24d3c44adef7cd5d9787cac00 (../shared/third_party/README.md).
COMMIT=""
if [ "$LWS_VERSION" = v0.10.0 ]; then
  SHA256=${LWS_SRC_SHA256:-f48fe4060bd33e35ffe303a24f07004a3dc20f2d153ac590bba5b9c3c801630d}
  COMMIT=2161f38ff333f9e24d3c44adef7cd5d9787cac00
else
  SHA256=${LWS_SRC_SHA256:-}
fi
CRDS=(leaderworkerset.x-k8s.io_leaderworkersets.yaml
  disaggregatedset.x-k8s.io_disaggregatedsets.yaml
  disaggregatedset.x-k8s.io_disaggregatedsetrolescalers.yaml)
WEBHOOK=(kustomization.yaml kustomizeconfig.yaml manifests.yaml mutating-patch.yaml service.yaml validating-patch.yaml)

log() { echo "lws: $*" >&2; }
die() { log "$*"; exit 1; }

have_all() {
  local f
  [ -x "$DIR/lws-manager" ] || return 1
  [ -s "$DIR/rbac/role.yaml" ] || return 1
  for f in "${CRDS[@]}"; do [ -s "$DIR/crds/$f" ] || return 1; done
  for f in "${WEBHOOK[@]}"; do [ -s "$DIR/webhook/$f" ] || return 1; done
}

if have_all; then
  echo "$DIR"
  exit 0
fi

mkdir -p "$CACHE_ROOT/lws"
work=$(mktemp -d "$CACHE_ROOT/lws/build.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
export GOWORK=off GOFLAGS="${GOFLAGS:-} -mod=mod"
start=$SECONDS

# The source: the module proxy's zip if it serves one (the .info and .mod
# can be served while the zip is refused), else the pinned tarball.
src=""
if json=$(go mod download -json "$MODULE@$LWS_VERSION" 2>/dev/null) &&
  dir=$(sed -n 's/.*"Dir": "\(.*\)".*/\1/p' <<<"$json") && [ -n "$dir" ] && [ -d "$dir/cmd" ]; then
  log "source of $MODULE@$LWS_VERSION from the module proxy"
  src=$dir
else
  [ -f "$TARBALL" ] || die "the module proxy does not serve $MODULE@$LWS_VERSION and there is no source tarball at $TARBALL; set LWS_SRC_TARBALL to lws-$LWS_VERSION-src.tar.gz (GitHub kubernetes-sigs/lws, tag $LWS_VERSION, without site/docs/keps/charts/.github)"
  [ -n "$SHA256" ] || die "no sha256 pinned for LeaderWorkerSet $LWS_VERSION: set LWS_SRC_SHA256 to the tarball's"
  got=$(sha256sum "$TARBALL" | cut -d' ' -f1)
  [ "$got" = "$SHA256" ] || die "$TARBALL has sha256 $got, want $SHA256: not the pinned LeaderWorkerSet $LWS_VERSION source"
  log "the module proxy does not serve $MODULE@$LWS_VERSION; source from $TARBALL (sha256 checked)"
  tar -xzf "$TARBALL" -C "$work"
  src=$work/lws
  [ -d "$src/cmd" ] || die "$TARBALL does not unpack to lws/cmd"
fi

# Everything is made in the temporary folder and moved into place at the
# end, so an interrupted build leaves nothing half-written in the cache.
log "building the LeaderWorkerSet manager $LWS_VERSION (about 80 s cold on 2 cores, longer with a cold module cache)"
ver=sigs.k8s.io/lws/pkg/version
ldflags="-s -w -X $ver.GitVersion=$LWS_VERSION"
[ -z "$COMMIT" ] || ldflags="$ldflags -X $ver.GitCommit=$COMMIT"
(cd "$src" && go build -trimpath -ldflags "$ldflags" -o "$work/out/lws-manager" ./cmd/)
mkdir -p "$work/out/crds" "$work/out/rbac" "$work/out/webhook"
for f in "${CRDS[@]}"; do cp "$src/config/crd/bases/$f" "$work/out/crds/$f"; done
cp "$src/config/rbac/role.yaml" "$work/out/rbac/role.yaml"
for f in "${WEBHOOK[@]}"; do cp "$src/config/webhook/$f" "$work/out/webhook/$f"; done
# The module cache is read-only: make the copies writable, so that the
# cache can be removed with rm -rf.
chmod -R u+w "$work/out"

mkdir -p "$DIR"
for d in crds rbac webhook; do
  rm -rf "${DIR:?}/$d"
  mv "$work/out/$d" "$DIR/$d"
done
mv -f "$work/out/lws-manager" "$DIR/lws-manager"
have_all || die "the manager or its manifests are still missing in $DIR"
log "built in $((SECONDS - start))s into $DIR"
echo "$DIR"
