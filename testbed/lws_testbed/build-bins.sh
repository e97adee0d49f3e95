#!/usr/bin/env bash
# Builds from the Go module proxy with the machine's Go, into a cache directory outside the
# repository keyed by the pinned versions (reused when present); prints that directory last.
#
#   build-bins.sh [control-plane]  kube-apiserver, kube-controller-manager, kube-scheduler and
#                                  kubectl (k8s.io/kubernetes through a wrapper module with the
#                                  staging replaces), etcd (wrapper module) and kwok
#   build-bins.sh node             what a real node runs: kubelet and kube-proxy (same pins and
#                                  directory as the control plane), CoreDNS with a trimmed plugin
#                                  set (realnode/coredns/main.go) and lws-probe, the e2e tests'
#                                  workload program (realnode/probe/main.go)
#   build-bins.sh all              both, the missing Kubernetes binaries in one go build (shared
#                                  packages are compiled once)
#   build-bins.sh upstream-lws     the upstream LWS manager (sigs.k8s.io/lws/cmd) and its CRDs,
#                                  for side-by-side comparisons
#   build-bins.sh kueue            Kueue's manager (sigs.k8s.io/kueue/cmd/kueue), its CRDs and
#                                  webhook manifests, for the Kueue tests and make run KUEUE=1
#   build-bins.sh dshash           dshash (dshash/main.go beside this script, on upstream's
#                                  module): upstream's DisaggregatedSet revision hash and the Go
#                                  JSON layout it depends on, for the tests
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
. "$here/versions.env"
# Another supported version than the default (make ... KUBE_VERSION=1.33.13 sets it).
KUBE_VERSION=${LWS_KUBE_VERSION:-$KUBE_VERSION}

cache=${LWS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lws-operator}
CONTROL_PLANE_BINS="kube-apiserver kube-controller-manager kube-scheduler kubectl"
NODE_BINS="kubelet kube-proxy"
# Keyed by the source of our own main packages: a change rebuilds them (binaries.py agrees).
key() { sha256sum "$1" | cut -c1-12; }
node_dirs() {
  coredns_bins="$cache/bin/coredns-v$COREDNS_VERSION-$(key "$here/realnode/coredns/main.go")"
  probe_bins="$cache/bin/lws-probe-$(key "$here/realnode/probe/main.go")"
}

die() { echo "build-cluster-bins: $*" >&2; exit 1; }

target=${1:-control-plane}
bins="$cache/bin/kube-v$KUBE_VERSION-etcd-v$ETCD_VERSION-kwok-v$KWOK_VERSION"
case "$target" in
  control-plane)
    KUBE_BINS="$CONTROL_PLANE_BINS"
    need="$bins/etcd $bins/kwok" ;;
  node)
    node_dirs
    KUBE_BINS="$NODE_BINS"
    need="$coredns_bins/coredns $probe_bins/lws-probe" ;;
  all)
    node_dirs
    KUBE_BINS="$CONTROL_PLANE_BINS $NODE_BINS"
    need="$bins/etcd $bins/kwok $coredns_bins/coredns $probe_bins/lws-probe" ;;
  upstream-lws)
    bins="$cache/bin/lws-v$LWS_VERSION"
    KUBE_BINS=""
    need="$bins/lws-manager" ;;
  kueue)
    bins="$cache/bin/kueue-v$KUEUE_VERSION"
    KUBE_BINS=""
    need="$bins/kueue-manager" ;;
  dshash)
    src_hash=$(sha256sum "$here/dshash/main.go" | cut -c1-12)
    bins="$cache/bin/dshash-lws-v$LWS_VERSION-$src_hash"
    KUBE_BINS=""
    need="$bins/dshash" ;;
  *) die "unknown target '$target' (control-plane, node, all, upstream-lws, kueue or dshash)" ;;
esac
for b in $KUBE_BINS; do need="$need $bins/$b"; done

have_all() {
  for b in $need; do
    [ -x "$b" ] || return 1
  done
}

# One build per binary directory at a time: a second one (make test's background build of the
# other versions, then the version's own step) waits for the first and finds its binaries.
mkdir -p "$cache"
exec 9>"$cache/.build-${bins##*/}.lock"
flock 9

if have_all; then
  echo "$bins"
  exit 0
fi

command -v go >/dev/null 2>&1 || die "Go is not installed or not on PATH (need Go >= 1.26 to build the control plane)"
gover=$(go env GOVERSION 2>/dev/null | sed 's/^go//')
case "$gover" in
  1.2[6-9]*|1.[3-9]*) ;;
  *) die "Go $gover is too old: building Kubernetes v$KUBE_VERSION needs Go >= 1.26" ;;
esac

export GOTOOLCHAIN=local GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0
mkdir -p "$bins" "$cache"
work=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
log="$work/go.log"

# Runs a go command; on failure prints one line naming the cause, then the log's tail.
run_go() {
  local what=$1; shift
  if ! "$@" >"$log" 2>&1; then
    local cause
    cause=$(grep -m1 -E '(403 Forbidden|404 Not Found|410 Gone|unknown revision|dial tcp|connection refused|no such host|i/o timeout|TLS handshake|GOPROXY=off)' "$log" || true)
    [ -n "$cause" ] || cause=$(tail -n 1 "$log")
    echo "build-cluster-bins: $what failed: $cause" >&2
    tail -n 20 "$log" >&2
    exit 1
  fi
}

started=$(date +%s)

# Builds command package $pkg of module $module at $version: a wrapper module requires the module
# (go install refuses modules whose go.mod has replace directives, e.g. etcd's server) and lists
# the package as a tool; the package itself is never looked up as a module of its own.
build_tool() {
  local name=$1 module=$2 version=$3 pkg=$4 ldflags=${5:-}
  [ -x "$bins/$name" ] && return 0
  echo "building $name $version ..." >&2
  local t=$SECONDS
  mkdir -p "$work/$name" && cd "$work/$name"
  run_go "go mod init ($name)" go mod init "local/${name}build"
  run_go "downloading $module@$version" go get "$module@$version"
  go mod edit -tool="$pkg"
  run_go "building $name" go build -trimpath -ldflags "-s -w $ldflags" -o "$work/out/$name" "$pkg"
  mv "$work/out/$name" "$bins/$name"
  echo "built $name in $(( SECONDS - t ))s" >&2
}

if [ "$target" = upstream-lws ]; then
  build_tool lws-manager sigs.k8s.io/lws "v$LWS_VERSION" sigs.k8s.io/lws/cmd \
    "-X sigs.k8s.io/lws/pkg/version.GitVersion=v$LWS_VERSION"
  # Upstream's CRDs (config/crd/bases ships in the module), to install before its manager.
  moddir=$(cd "$work/lws-manager" && go list -m -f '{{.Dir}}' sigs.k8s.io/lws)
  mkdir -p "$bins/crds" && cp "$moddir"/config/crd/bases/*.yaml "$bins/crds/"
  chmod u+w "$bins"/crds/*.yaml
  echo "built in $(( $(date +%s) - started ))s" >&2
  echo "$bins"
  exit 0
fi

if [ "$target" = kueue ]; then
  echo "(cold: ~20 min on 2 cores)" >&2
  build_tool kueue-manager sigs.k8s.io/kueue "v$KUEUE_VERSION" sigs.k8s.io/kueue/cmd/kueue \
    "-X sigs.k8s.io/kueue/pkg/version.GitVersion=v$KUEUE_VERSION"
  # Kueue's CRDs and webhook configurations ship in the module (config/components/...).
  moddir=$(cd "$work/kueue-manager" && go list -m -f '{{.Dir}}' sigs.k8s.io/kueue)
  mkdir -p "$bins/crds" "$bins/webhook"
  cp "$moddir"/config/components/crd/bases/*.yaml "$bins/crds/"
  cp "$moddir"/config/components/webhook/manifests.yaml "$bins/webhook/"
  chmod u+w "$bins"/crds/*.yaml "$bins"/webhook/*.yaml
  echo "built in $(( $(date +%s) - started ))s" >&2
  echo "$bins"
  exit 0
fi

if [ "$target" = dshash ]; then
  echo "building dshash on sigs.k8s.io/lws v$LWS_VERSION ..." >&2
  mkdir -p "$work/dshash" && cd "$work/dshash"
  cp "$here/dshash/main.go" .
  run_go "go mod init (dshash)" go mod init local/dshash
  run_go "downloading sigs.k8s.io/lws@v$LWS_VERSION" go get "sigs.k8s.io/lws@v$LWS_VERSION"
  run_go "resolving dshash's imports" go mod tidy
  run_go "building dshash" go build -trimpath -o "$bins/dshash" .
  echo "built in $(( $(date +%s) - started ))s" >&2
  echo "$bins"
  exit 0
fi

# Builds our own main package $src (a directory with main.go) as $out/$name: a module of its
# own that requires $deps (module@version, may be empty: the standard library only).
build_main() {
  local name=$1 src=$2 out=$3; shift 3
  [ -x "$out/$name" ] && return 0
  echo "building $name ..." >&2
  local t=$SECONDS
  mkdir -p "$work/$name" "$out" && cd "$work/$name"
  cp "$src/main.go" .
  run_go "go mod init ($name)" go mod init "local/$name"
  for dep in "$@"; do run_go "downloading $dep" go get "$dep"; done
  run_go "building $name" go build -trimpath -ldflags "-s -w" -o "$work/out/$name" .
  mv "$work/out/$name" "$out/$name"
  echo "built $name in $(( SECONDS - t ))s" >&2
}

# etcd and kwok do not depend on the Kubernetes version: reuse them from another version's
# directory when one has them.
reuse() {
  local name=$1 other
  [ -x "$bins/$name" ] && return 0
  for other in "$cache"/bin/kube-v*-etcd-v"$ETCD_VERSION"-kwok-v"$KWOK_VERSION"/"$name"; do
    if [ -x "$other" ]; then cp "$other" "$bins/$name.tmp" && mv "$bins/$name.tmp" "$bins/$name"; return 0; fi
  done
}
case "$target" in control-plane|all)
  reuse etcd; reuse kwok
  build_tool etcd go.etcd.io/etcd/server/v3 "v$ETCD_VERSION" go.etcd.io/etcd/server/v3
  build_tool kwok sigs.k8s.io/kwok "v$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwok ;;
esac
case "$target" in node|all)
  build_main coredns "$here/realnode/coredns" "$coredns_bins" "github.com/coredns/coredns@v$COREDNS_VERSION"
  build_main lws-probe "$here/realnode/probe" "$probe_bins" ;;
esac

missing_kube=""
for b in $KUBE_BINS; do [ -x "$bins/$b" ] || missing_kube="$missing_kube $b"; done
if [ -n "$missing_kube" ]; then
  echo "building$missing_kube v$KUBE_VERSION (cold: about 10 min on 2 cores) ..." >&2
  t=$SECONDS
  staging_v="0.${KUBE_VERSION#1.}"
  minor=$(echo "$KUBE_VERSION" | cut -d. -f2)
  mkdir -p "$work/kube" && cd "$work/kube"
  run_go "downloading k8s.io/kubernetes@v$KUBE_VERSION" go mod download -json "k8s.io/kubernetes@v$KUBE_VERSION"
  gomod=$(python3 -c 'import sys,json;print(json.load(open(sys.argv[1]))["GoMod"])' "$log")
  # k8s.io/kubernetes replaces every staging module with ./staging/src/...; a consuming module
  # must replace each of them with its published v0.<minor>.<patch> instead.
  staging=$(grep -E '=>[[:space:]]*\./staging/' "$gomod" | awk '{print $1}' | sort -u)
  [ -n "$staging" ] || die "found no staging modules in $gomod"
  run_go "go mod init (kube)" go mod init local/kubebuild
  for m in $staging; do go mod edit -replace="$m=$m@v$staging_v"; done
  pkgs=""
  for b in $missing_kube; do pkgs="$pkgs k8s.io/kubernetes/cmd/$b"; done
  # shellcheck disable=SC2086
  run_go "downloading the Kubernetes v$KUBE_VERSION modules" go get -tool $(for p in $pkgs; do echo "$p@v$KUBE_VERSION"; done)
  ldf="-s -w -X k8s.io/component-base/version.gitVersion=v$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
  ldf="$ldf -X k8s.io/client-go/pkg/version.gitVersion=v$KUBE_VERSION -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"
  # shellcheck disable=SC2086
  run_go "building the Kubernetes binaries" go build -trimpath -ldflags "$ldf" -o "$work/out/" $pkgs
  for b in $missing_kube; do mv "$work/out/$b" "$bins/"; done
  echo "built$missing_kube in $(( SECONDS - t ))s" >&2
fi

echo "built in $(( $(date +%s) - started ))s" >&2
echo "$bins"
