"""Benchmark: time from applying a LeaderWorkerSet to all its pods created and to
``readyReplicas == R`` (default 32 groups x 8 pods), on a fresh local cluster per run.

    python -m bench.create_groups [--groups 32] [--size 8] [--runs 3]

Reports every run, the median, and the machine; writes Markdown and JSON to bench/results/.
A benchmark, not a test: it asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from lws_operator.api import constants as c
from lws_operator.cluster.binaries import pins
from lws_operator.cluster.local import ClusterConfig, LocalCluster
from lws_operator.cluster.operator_process import start_operator
from lws_operator.kube.client import Kube
from lws_operator.kube.manifests import Applier, load_documents
from lws_operator.kube.paths import resource_path
from lws_operator.kube.wait import wait_for_objects

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"


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


def one_run(groups: int, size: int, state: Path) -> dict[str, float]:
    # The cluster is started outside the event loop (LocalCluster.start runs its own).
    with LocalCluster(ClusterConfig(state_dir=state)) as cluster:
        return asyncio.run(measure(cluster, groups, size, state))


async def measure(cluster: LocalCluster, groups: int, size: int, state: Path) -> dict[str, float]:
    async with await Kube.connect(cluster.kubeconfig()) as kube:
        await Applier(kube).apply_all(load_documents(*sorted((REPO / "crds").glob("*.yaml"))))
        op = await start_operator(
            kube, cluster.kubeconfig("lws-operator"), state.parent / f"{state.name}-op.log"
        )
        try:
            name = "bench"
            pods_path = resource_path("v1", "pods", namespace="default")
            want_pods = groups * size
            timings: dict[str, float] = {}
            t0 = time.monotonic()
            await kube.create(
                resource_path(c.API_VERSION, c.PLURAL, namespace="default"),
                lws_manifest(name, groups, size),
            )
            created = asyncio.ensure_future(
                wait_for_objects(
                    kube,
                    pods_path,
                    lambda objs: len(objs) >= want_pods,
                    timeout=600,
                    what=f"{want_pods} pods created",
                    label_selector=f"{c.SET_NAME_LABEL}={name}",
                    summary=lambda objs: f"{len(objs)} pods",
                )
            )
            created.add_done_callback(lambda _: timings.setdefault("pods_created_s", now(t0)))
            await wait_for_objects(
                kube,
                resource_path(c.API_VERSION, c.PLURAL, namespace="default"),
                lambda objs: (
                    (objs.get(f"default/{name}", {}).get("status") or {}).get("readyReplicas")
                    == groups
                ),
                timeout=600,
                what=f"readyReplicas == {groups}",
                field_selector=f"metadata.name={name}",
            )
            timings["ready_s"] = now(t0)
            await created
            op.check_alive()
            return timings
        finally:
            await op.stop()


def now(t0: float) -> float:
    return round(time.monotonic() - t0, 3)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.create_groups")
    parser.add_argument("--groups", type=int, default=32)
    parser.add_argument("--size", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    runs = []
    with tempfile.TemporaryDirectory(prefix="lws-bench-") as tmp:
        for i in range(args.runs):
            result = one_run(args.groups, args.size, Path(tmp) / f"run{i}")
            print(f"run {i + 1}: {result}", flush=True)
            runs.append(result)
    summary = {
        key: round(statistics.median(r[key] for r in runs), 3)
        for key in ("pods_created_s", "ready_s")
    }
    m = machine()
    report: dict[str, Any] = {
        "scenario": f"create {args.groups} groups x {args.size} pods",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": m,
        "runs": runs,
        "median": summary,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    stem = f"create-{args.groups}x{args.size}"
    (RESULTS / f"{stem}.json").write_text(json.dumps(report, indent=2) + "\n")
    lines = [
        f"# {report['scenario']} ({report['date']})",
        "",
        f"Machine: {m['cpus']} CPUs ({m['cpu_model']}), {m['memory_gib']} GiB, "
        f"Python {m['python']}; Kubernetes v{m['versions']['KUBE_VERSION']}, kwok "
        f"v{m['versions']['KWOK_VERSION']}; a fresh local cluster per run.",
        "",
        "| run | all pods created (s) | readyReplicas == R (s) |",
        "|---|---|---|",
        *[f"| {i + 1} | {r['pods_created_s']} | {r['ready_s']} |" for i, r in enumerate(runs)],
        f"| **median** | **{summary['pods_created_s']}** | **{summary['ready_s']}** |",
        "",
    ]
    (RESULTS / f"{stem}.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
