#!/usr/bin/env bash
# Builds the local control plane from the Go module proxy with the machine's Go:
# kube-apiserver, kube-controller-manager, kube-scheduler (k8s.io/kubernetes through a wrapper
# module with the staging replaces), etcd (wrapper module) and kwok.
# Binaries go to a cache directory outside the repository, keyed by the pinned versions, and are
# reused when present. Prints the directory that holds the binaries on its last line.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
. "$here/versions.env"

cache=${LWS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lws-operator}
KUBE_BINS="kube-apiserver kube-controller-manager kube-scheduler kubectl"
bins="$cache/bin/kube-v$KUBE_VERSION-etcd-v$ETCD_VERSION-kwok-v$KWOK_VERSION"

die() { echo "build-cluster-bins: $*" >&2; exit 1; }

have_all() {
  for b in $KUBE_BINS etcd kwok; do
    [ -x "$bins/$b" ] || return 1
  done
}

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
mkdir -p "$bins"
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

# Builds one command of a module that has its own go.mod: a wrapper module requires it as a tool.
build_tool() {
  local name=$1 module=$2 pkg=$3
  [ -x "$bins/$name" ] && return 0
  echo "building $name ${module#*@} ..." >&2
  mkdir -p "$work/$name" && cd "$work/$name"
  run_go "go mod init ($name)" go mod init "local/${name}build"
  run_go "downloading $module" go get -tool "$module"
  run_go "building $name" go build -trimpath -ldflags "-s -w" -o "$work/out/$name" "$pkg"
  mv "$work/out/$name" "$bins/$name"
}

# go install refuses etcd's server module (its go.mod has replace directives).
build_tool etcd "go.etcd.io/etcd/server/v3@v$ETCD_VERSION" go.etcd.io/etcd/server/v3
build_tool kwok "sigs.k8s.io/kwok/cmd/kwok@v$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwok

missing_kube=""
for b in $KUBE_BINS; do [ -x "$bins/$b" ] || missing_kube="$missing_kube $b"; done
if [ -n "$missing_kube" ]; then
  echo "building$missing_kube v$KUBE_VERSION (cold: 20-40 min on 2 cores) ..." >&2
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
  run_go "building the Kubernetes control plane" go build -trimpath -ldflags "$ldf" -o "$work/out/" $pkgs
  for b in $missing_kube; do mv "$work/out/$b" "$bins/"; done
fi

echo "built in $(( $(date +%s) - started ))s" >&2
echo "$bins"
