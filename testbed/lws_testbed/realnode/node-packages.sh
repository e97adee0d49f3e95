#!/usr/bin/env bash
# Installs the Debian packages a real node needs, when some are missing (apt-get update first):
# the container runtime (containerd, runc), CNI plugins, the packet filters kube-proxy and CNI
# program (iptables, nftables) and their tools (conntrack, ethtool, socat for port-forward),
# debootstrap for the operator image's root filesystem, busybox-static for the workload image,
# and a C compiler with the static C library for the pause program.
#
#   node-packages.sh          install what is missing; one line naming the cause when it cannot
#   node-packages.sh --check  exit 0 when everything is installed, else print what is missing
set -euo pipefail

PACKAGES="containerd runc containernetworking-plugins iptables nftables conntrack socat ethtool
debootstrap busybox-static gcc libc6-dev"

die() { echo "node-packages: $*" >&2; exit 1; }

[ "$(uname -s)" = Linux ] || die "a real node needs Linux (this machine runs $(uname -s))"

missing=""
if command -v dpkg-query >/dev/null 2>&1; then
  for p in $PACKAGES; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    [ "$status" = "install ok installed" ] || missing="$missing $p"
  done
else
  missing=" $(echo $PACKAGES)"
fi

if [ "${1:-}" = --check ]; then
  [ -z "$missing" ] || { echo "missing Debian packages:$missing"; exit 1; }
  exit 0
fi
[ -n "$missing" ] || exit 0

[ "$(id -u)" = 0 ] || die "installing$missing needs root (a real node needs root anyway)"
command -v apt-get >/dev/null 2>&1 || die "no apt-get on this machine: install$missing with its package manager"
echo "installing Debian packages:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null || die "apt-get update failed (are Debian's packages reachable?)"
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null \
  || die "apt-get install$missing failed"
