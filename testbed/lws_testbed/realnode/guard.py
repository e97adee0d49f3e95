"""One real-node cluster per machine: its host state is global (packet filters, ``cni0``,
sysctls, cgroups) and its ports are fixed (kubelet 10250 and 10248, kube-proxy 10249 and
10256).

The guard file ``/run/lws-testbed/real-node.json`` names the cluster that owns the host, its
processes and where the host state from before it started is kept. A second start while that
cluster runs is refused, naming it; a guard left by a cluster whose processes are all gone (its
owner was killed) is stale: the host is restored from that record first.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from lws_testbed.pids import pid_runs

GUARD_DIR = Path("/run/lws-testbed")
FIXED_PORTS = {
    10250: "kubelet",
    10248: "kubelet healthz",
    10249: "kube-proxy metrics",
    10256: "kube-proxy healthz",
}


class GuardError(RuntimeError):
    """The host is taken, or cannot be used; one line naming the cause."""


@dataclass
class Owner:
    state_dir: str
    host_before: str  # the HostState JSON file
    pids: list[dict[str, Any]] = field(default_factory=list)  # {"pid", "argv0"}


def _guard_file() -> Path:
    return GUARD_DIR / "real-node.json"


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    GUARD_DIR.mkdir(parents=True, exist_ok=True)
    with open(GUARD_DIR / "lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def read_owner() -> Owner | None:
    try:
        return Owner(**json.loads(_guard_file().read_text()))
    except (OSError, ValueError, TypeError):
        return None


def running(owner: Owner) -> list[int]:
    return [p["pid"] for p in owner.pids if pid_runs(p["pid"], p["argv0"])]


def port_users() -> list[str]:
    busy = []
    for port, what in sorted(FIXED_PORTS.items()):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("0.0.0.0", port))
            except OSError:
                busy.append(f"{port} ({what})")
    return busy


def acquire(owner: Owner) -> Owner | None:
    """Take the host for ``owner``. Returns the stale owner found (whose host state the caller
    must restore first), or None. Raises GuardError when another real-node cluster runs or a
    fixed port is taken."""
    with _locked():
        stale = read_owner()
        if stale is not None and stale.state_dir != owner.state_dir and (pids := running(stale)):
            raise GuardError(
                f"a real-node cluster already runs on this machine (state {stale.state_dir}, "
                f"pids {pids}): one per machine; stop it first (make e2e-down)"
            )
        if stale is not None and running(stale):
            raise GuardError(
                f"this real-node cluster (state {stale.state_dir}) still runs: stop it first"
            )
        if busy := port_users():
            raise GuardError(
                f"port(s) {', '.join(busy)} in use: another kubelet or kube-proxy runs here"
            )
        write(owner)
        return stale


def write(owner: Owner) -> None:
    tmp = _guard_file().with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(owner), indent=1))
    os.replace(tmp, _guard_file())


def release(state_dir: str) -> None:
    with _locked():
        owner = read_owner()
        if owner is not None and owner.state_dir == state_dir:
            with contextlib.suppress(FileNotFoundError):
                _guard_file().unlink()
