"""Benchmark: group recovery. In a LeaderWorkerSet of 8 groups x 8 pods, break one group and
time until that group is Ready again with all-new pods (and the LWS Available).

    python -m bench.recovery [--groups 8] [--size 8] [--runs 5] [--breaker restart|delete]

``restart``: one worker container restarts (restartCount + 1, as a kubelet reports it);
``delete``: one worker pod is deleted. One cluster for all runs; each run starts from an
Available LWS. Reports every run and the median with the machine, in bench/results/.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import lws_manifest, operated, write_report
from lws_operator.api import constants as c
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_operator.plan.meta import pod_ready
from lws_testbed.local import ClusterConfig, LocalCluster
from lws_testbed.simulate import restart_container
from lws_testbed.wait import Objects, wait_for_objects

NAME = "bench"
GROUP = 3


def available(objs: Objects) -> bool:
    lws = objs.get(f"default/{NAME}") or {}
    status = lws.get("status") or {}
    return status.get("observedGeneration") == lws.get("metadata", {}).get("generation") and any(
        x.get("type") == "Available" and x.get("status") == "True"
        for x in status.get("conditions") or []
    )


async def wait_available(kube: Kube, groups: int) -> None:
    await wait_for_objects(
        kube,
        resource_path(c.API_VERSION, c.PLURAL, namespace="default"),
        lambda objs: (
            available(objs) and objs[f"default/{NAME}"]["status"].get("readyReplicas") == groups
        ),
        timeout=300,
        what="LWS Available",
        field_selector=f"metadata.name={NAME}",
    )


async def group_pods(kube: Kube) -> dict[str, dict[str, Any]]:
    listing = await kube.list(
        resource_path("v1", "pods", namespace="default"),
        label_selector=f"{c.SET_NAME_LABEL}={NAME},{c.GROUP_INDEX_LABEL}={GROUP}",
    )
    return {p["metadata"]["name"]: p for p in listing["items"]}


async def one_recovery(kube: Kube, groups: int, size: int, breaker: str) -> dict[str, float]:
    old = {p["metadata"]["uid"] for p in (await group_pods(kube)).values()}
    victim = f"{NAME}-{GROUP}-{size - 1}"
    t0 = time.monotonic()
    if breaker == "restart":
        await restart_container(kube, "default", victim)
    else:
        await kube.delete(resource_path("v1", "pods", namespace="default", name=victim))

    def recovered(objs: Objects) -> bool:
        live = [p for p in objs.values() if not p["metadata"].get("deletionTimestamp")]
        return (
            len(live) == size
            and not {p["metadata"]["uid"] for p in live} & old
            and all(pod_ready(p) for p in live)
        )

    await wait_for_objects(
        kube,
        resource_path("v1", "pods", namespace="default"),
        recovered,
        timeout=300,
        what=f"group {GROUP} Ready again with all-new pods",
        label_selector=f"{c.SET_NAME_LABEL}={NAME},{c.GROUP_INDEX_LABEL}={GROUP}",
    )
    pods_ready = round(time.monotonic() - t0, 3)
    await wait_available(kube, groups)
    return {"group_ready_s": pods_ready, "lws_available_s": round(time.monotonic() - t0, 3)}


async def measure(
    cluster: LocalCluster, groups: int, size: int, runs: int, breaker: str, log: Path
) -> list[dict[str, float]]:
    async with operated(cluster, log) as kube:
        await kube.create(
            resource_path(c.API_VERSION, c.PLURAL, namespace="default"),
            lws_manifest(NAME, groups, size),
        )
        await wait_available(kube, groups)
        results = []
        for i in range(runs):
            result = await one_recovery(kube, groups, size, breaker)
            print(f"run {i + 1}: {result}", flush=True)
            results.append(result)
        return results


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.recovery")
    parser.add_argument("--groups", type=int, default=8)
    parser.add_argument("--size", type=int, default=8)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--breaker", choices=["restart", "delete"], default="restart")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="lws-bench-") as tmp,
        LocalCluster(ClusterConfig(state_dir=Path(tmp) / "cluster")) as cluster,
    ):
        runs = asyncio.run(
            measure(cluster, args.groups, args.size, args.runs, args.breaker, Path(tmp) / "op.log")
        )
    what = "worker container restart" if args.breaker == "restart" else "worker pod deletion"
    scenario = f"recovery after a {what}, group of {args.size} in {args.groups} groups"
    stem = f"recovery-{args.breaker}-{args.groups}x{args.size}"
    print(write_report(stem, scenario, ("group_ready_s", "lws_available_s"), runs))


if __name__ == "__main__":
    main()
