"""What every benchmark shares: the machine description, a cluster with the operator, reports."""

from __future__ import annotations

import datetime
import json
import os
import platform
import statistics
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from lws_operator.api import constants as c
from lws_operator.kube.client import Kube
from lws_testbed.binaries import pins
from lws_testbed.local import LocalCluster
from lws_testbed.lws_api import install_lws_api
from lws_testbed.operator_process import start_operator
from lws_testbed.source_operator import SOURCE_ENV

REPO = Path(__file__).resolve().parent.parent
# LWS_BENCH_RESULTS: write the reports elsewhere (the tests that run the benchmarks small do).
RESULTS = Path(os.environ.get("LWS_BENCH_RESULTS") or REPO / "bench" / "results")
CONFIG_MODULE = "lws_operator/config.py"


def machine() -> dict[str, Any]:
    cpu = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_kb = int(Path("/proc/meminfo").read_text().split()[1])
    return {
        "cpus": os.cpu_count(),
        "cpu_model": cpu,
        "memory_gib": round(mem_kb / 2**20, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "versions": pins(),
    }


def lws_manifest(name: str, groups: int, size: int) -> dict[str, Any]:
    pod = {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]}
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.KIND,
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": groups,
            "leaderWorkerTemplate": {"size": size, "workerTemplate": {"spec": pod}},
        },
    }


def no_backoff(directory: Path) -> tuple[str, ...]:
    """``--config FILE`` arguments turning the crash-loop backoff off (docs/configuration.md):
    a benchmark that breaks one group run after run measures recovery, not the backoff. None
    for another tree's operator (LWS_OPERATOR_SOURCE) from before the backoff: it has none."""
    source = os.environ.get(SOURCE_ENV)
    if source and "groupRecreation" not in (Path(source) / CONFIG_MODULE).read_text():
        return ()
    path = directory / "bench-config.yaml"
    path.write_text(
        "apiVersion: config.lws-operator.x-k8s.io/v1alpha1\n"
        "kind: Configuration\n"
        "groupRecreation: {backoff: {initialSeconds: 0}}\n"
    )
    return "--config", str(path)


@asynccontextmanager
async def operated(cluster: LocalCluster, log: Path) -> AsyncIterator[Kube]:
    """The CRD installed and the operator running (as its own process) on ``cluster``."""
    async with await Kube.connect(cluster.kubeconfig()) as kube:
        await install_lws_api(kube)
        op = await start_operator(
            kube, cluster.kubeconfig("lws-operator"), log, *no_backoff(log.parent)
        )
        try:
            yield kube
            op.check_alive()
        finally:
            await op.stop()


def write_report(
    stem: str, scenario: str, columns: Sequence[str], runs: list[dict[str, float]]
) -> str:
    """Write bench/results/<stem>.{json,md}; return the Markdown."""
    m = machine()
    median = {k: round(statistics.median(r[k] for r in runs), 3) for k in columns}
    report = {
        "scenario": scenario,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": m,
        "runs": runs,
        "median": median,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{stem}.json").write_text(json.dumps(report, indent=2) + "\n")
    lines = [
        f"# {scenario} ({report['date']})",
        "",
        f"Machine: {m['cpus']} CPUs ({m['cpu_model']}), {m['memory_gib']} GiB, "
        f"Python {m['python']}; Kubernetes v{m['versions']['KUBE_VERSION']}, kwok "
        f"v{m['versions']['KWOK_VERSION']}.",
        "",
        "| run | " + " | ".join(columns) + " |",
        "|---" * (len(columns) + 1) + "|",
        *[
            f"| {i + 1} | " + " | ".join(str(r[k]) for k in columns) + " |"
            for i, r in enumerate(runs)
        ],
        "| **median** | " + " | ".join(f"**{median[k]}**" for k in columns) + " |",
        "",
    ]
    text = "\n".join(lines)
    (RESULTS / f"{stem}.md").write_text(text)
    return text
