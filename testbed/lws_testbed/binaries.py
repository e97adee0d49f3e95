"""Where the control-plane binaries live, and building them when they are missing.

The pins are in ``versions.env`` beside this file (one place, shared with ``build-bins.sh``);
the binaries are cached outside the repository under ``$LWS_CACHE_DIR`` (default
``~/.cache/lws-operator``), in a directory named after the pins.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
BUILD_SCRIPT = HERE / "build-bins.sh"
KUBE_BINARIES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
ALL_BINARIES = (*KUBE_BINARIES, "etcd", "kwok")
# What a real node runs (realnode/): kubelet and kube-proxy sit beside the control plane (same
# pins); CoreDNS and the e2e workload program are built from our own main packages.
NODE_KUBE_BINARIES = ("kubelet", "kube-proxy")
REALNODE = HERE / "realnode"


class BinariesError(RuntimeError):
    pass


KUBE_VERSION_ENV = "LWS_KUBE_VERSION"
"""Selects another Kubernetes version than the default (``make ... KUBE_VERSION=1.33.13``)."""


def pins() -> dict[str, str]:
    """The pins of ``versions.env``, ``KUBE_VERSION`` as ``$LWS_KUBE_VERSION`` selects it."""
    out = {}
    for line in (HERE / "versions.env").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            out[key.strip()] = value.strip().strip('"')
    if selected := os.environ.get(KUBE_VERSION_ENV):
        out["KUBE_VERSION"] = selected
    return out


def supported_kube_versions() -> tuple[str, ...]:
    """Every Kubernetes version the project is tested on, oldest first."""
    return tuple(pins()["KUBE_VERSIONS"].split())


def kube_minor(version: str | None = None) -> int:
    """The minor of ``version`` (default: the selected one): 33 for ``1.33.13``."""
    return int((version or pins()["KUBE_VERSION"]).split(".")[1])


def cache_root() -> Path:
    if env := os.environ.get("LWS_CACHE_DIR"):
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "lws-operator"


def bin_dir() -> Path:
    p = pins()
    key = f"kube-v{p['KUBE_VERSION']}-etcd-v{p['ETCD_VERSION']}-kwok-v{p['KWOK_VERSION']}"
    return cache_root() / "bin" / key


def _source_key(main_go: Path) -> str:
    return hashlib.sha256(main_go.read_bytes()).hexdigest()[:12]


def node_binaries() -> dict[str, Path]:
    """Where build-bins.sh puts each real-node binary (it computes the same keys)."""
    coredns = REALNODE / "coredns" / "main.go"
    probe = REALNODE / "probe" / "main.go"
    out = {b: bin_dir() / b for b in NODE_KUBE_BINARIES}
    v = pins()["COREDNS_VERSION"]
    out["coredns"] = cache_root() / "bin" / f"coredns-v{v}-{_source_key(coredns)}" / "coredns"
    out["lws-probe"] = cache_root() / "bin" / f"lws-probe-{_source_key(probe)}" / "lws-probe"
    return out


def missing(*, node: bool = False) -> list[str]:
    d = bin_dir()
    out = [b for b in ALL_BINARIES if not os.access(d / b, os.X_OK)]
    if node:
        out += [n for n, p in node_binaries().items() if not os.access(p, os.X_OK)]
    return out


def ensure_binaries(*, node: bool = False) -> Path:
    """Return the binary directory, building what is missing (slow when cold); with ``node``
    also the real node's binaries, the missing Kubernetes ones in the same go build."""
    if not missing(node=node):
        return bin_dir()
    target = "all" if node else "control-plane"
    proc = subprocess.run(["bash", str(BUILD_SCRIPT), target], stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        # build-bins.sh already printed a one-line cause on stderr.
        raise BinariesError(f"building the {target} binaries failed (see the message above)")
    if still := missing(node=node):
        raise BinariesError(f"build finished but binaries are missing: {', '.join(still)}")
    return bin_dir()
