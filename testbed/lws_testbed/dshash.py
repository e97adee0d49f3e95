"""Upstream's own DisaggregatedSet revision hash, through ``dshash`` (``dshash/main.go``, built
by ``build-bins.sh dshash`` on the upstream module pinned in ``versions.env``): the reference
the operator's implementation (``lws_operator/plan/ds/revision.py``) is tested against, and
the source of ``lws_operator/api/go_layout.json``."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from lws_testbed.binaries import BUILD_SCRIPT


class DshashUnavailable(RuntimeError):
    """dshash is not built and cannot be built here (no Go, no module proxy)."""


def dshash_binary() -> Path:
    proc = subprocess.run(
        ["bash", str(BUILD_SCRIPT), "dshash"], capture_output=True, text=True, check=False
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        causes = [ln for ln in proc.stderr.splitlines() if ln.startswith("build-cluster-bins:")]
        raise DshashUnavailable(causes[0] if causes else proc.stderr.strip() or "no output")
    binary = Path(lines[-1]) / "dshash"
    if not binary.is_file():
        raise DshashUnavailable(f"{binary} missing after the build")
    return binary


def upstream_revisions(binary: Path, objects: Iterable[Mapping[str, Any]]) -> list[str]:
    """The revision upstream's controller computes for each DisaggregatedSet."""
    stdin = "".join(json.dumps(obj) + "\n" for obj in objects)
    proc = subprocess.run(
        [str(binary), "revision"], input=stdin, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"dshash revision failed: {proc.stderr.strip()}")
    return proc.stdout.split()


def upstream_layout(binary: Path) -> dict[str, Any]:
    proc = subprocess.run([str(binary), "layout"], capture_output=True, text=True, check=True)
    layout: dict[str, Any] = json.loads(proc.stdout)
    return layout
