"""Where the control-plane binaries live, and building them when they are missing.

The pins are in ``versions.env`` beside this file (one place, shared with ``build-bins.sh``);
the binaries are cached outside the repository under ``$LWS_CACHE_DIR`` (default
``~/.cache/lws-operator``), in a directory named after the pins.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
BUILD_SCRIPT = HERE / "build-bins.sh"
KUBE_BINARIES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
ALL_BINARIES = (*KUBE_BINARIES, "etcd", "kwok")


class BinariesError(RuntimeError):
    pass


def pins() -> dict[str, str]:
    out = {}
    for line in (HERE / "versions.env").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            out[key.strip()] = value.strip()
    return out


def cache_root() -> Path:
    if env := os.environ.get("LWS_CACHE_DIR"):
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "lws-operator"


def bin_dir() -> Path:
    p = pins()
    key = f"kube-v{p['KUBE_VERSION']}-etcd-v{p['ETCD_VERSION']}-kwok-v{p['KWOK_VERSION']}"
    return cache_root() / "bin" / key


def missing() -> list[str]:
    d = bin_dir()
    return [b for b in ALL_BINARIES if not os.access(d / b, os.X_OK)]


def ensure_binaries() -> Path:
    """Return the binary directory, building what is missing (slow when cold)."""
    if not missing():
        return bin_dir()
    proc = subprocess.run(["bash", str(BUILD_SCRIPT)], stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        # build-bins.sh already printed a one-line cause on stderr.
        raise BinariesError("building the control-plane binaries failed (see the message above)")
    if still := missing():
        raise BinariesError(f"build finished but binaries are missing: {', '.join(still)}")
    return bin_dir()
