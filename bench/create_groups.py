"""Benchmark: time from creating a LeaderWorkerSet to all its pods created and to
``readyReplicas == R`` (default 32 groups x 8 pods), on a fresh local cluster per run.

    python -m bench.create_groups [--groups 32] [--size 8] [--runs 3]

Reports every run and the median with the machine, in bench/results/. A benchmark, not a
test: it asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from bench.common import lws_manifest, operated, write_report
from lws_operator.api import constants as c
from lws_operator.kube.paths import resource_path
from lws_testbed.local import ClusterConfig, LocalCluster
from lws_testbed.wait import wait_for_objects

COLUMNS = ("pods_created_s", "ready_s")


def one_run(groups: int, size: int, state: Path) -> dict[str, float]:
    # The cluster is started outside the event loop (LocalCluster.start runs its own).
    with LocalCluster(ClusterConfig(state_dir=state)) as cluster:
        return asyncio.run(measure(cluster, groups, size, state.with_suffix(".operator.log")))


async def measure(cluster: LocalCluster, groups: int, size: int, log: Path) -> dict[str, float]:
    async with operated(cluster, log) as kube:
        name = "bench"
        timings: dict[str, float] = {}
        t0 = time.monotonic()
        await kube.create(
            resource_path(c.API_VERSION, c.PLURAL, namespace="default"),
            lws_manifest(name, groups, size),
        )
        created = asyncio.ensure_future(
            wait_for_objects(
                kube,
                resource_path("v1", "pods", namespace="default"),
                lambda objs: len(objs) >= groups * size,
                timeout=600,
                what=f"{groups * size} pods created",
                label_selector=f"{c.SET_NAME_LABEL}={name}",
                summary=lambda objs: f"{len(objs)} pods",
            )
        )
        created.add_done_callback(lambda _: timings.setdefault("pods_created_s", since(t0)))
        await wait_for_objects(
            kube,
            resource_path(c.API_VERSION, c.PLURAL, namespace="default"),
            lambda objs: (
                (objs.get(f"default/{name}", {}).get("status") or {}).get("readyReplicas") == groups
            ),
            timeout=600,
            what=f"readyReplicas == {groups}",
            field_selector=f"metadata.name={name}",
        )
        timings["ready_s"] = since(t0)
        await created
        return timings


def since(t0: float) -> float:
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
    scenario = f"create {args.groups} groups x {args.size} pods (fresh local cluster per run)"
    print(write_report(f"create-{args.groups}x{args.size}", scenario, COLUMNS, runs))


if __name__ == "__main__":
    main()
