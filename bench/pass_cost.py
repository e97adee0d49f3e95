"""Benchmark: the operator's CPU per reconcile pass woken by one pod event, by the size of the
LeaderWorkerSet, at rest. LWS of 2, 10 and 100 groups (default) are brought up on a fresh
local cluster with the operator as its own process; the operator is stopped and everything is
read into an in-process cache (``lws_testbed.snapshot``); then each pass follows one pod
event (the pod's group observation invalidated, as its watch event does) and reconciles the
LWS with a client that refuses every write (a pass at rest writes nothing).

Two modes: ``one group`` (what the operator does: the woken pod's group is observed again) and
``all groups`` (every group observed again, the cost before per-group caching).

    python -m bench.pass_cost [--groups 2,10,100] [--size 8] [--passes 200] [--out DIR]
                              [--profile]

With ``--profile``, the "one group" passes of the largest LWS also run under cProfile, and the
functions that take most of their time are written to ``pass-cost-profile.txt`` (the profiler
slows the passes down: its medians are not the report's).

Reports medians with the machine, in bench/results/pass-cost.{json,md}. A benchmark, not a
test: it asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import datetime
import io
import json
import pstats
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, cast

from bench.common import RESULTS, lws_manifest, machine, operated
from lws_operator.api import constants as c
from lws_operator.controller.lws.reconcile import Reconciler
from lws_operator.kube.client import Kube
from lws_operator.kube.events import EventRecorder
from lws_operator.kube.paths import resource_path
from lws_testbed.local import ClusterConfig, LocalCluster
from lws_testbed.snapshot import cache_of
from lws_testbed.wait import wait_for_objects

NAMESPACE = "default"


class ReadOnly:
    """The client's reads pass through; any write is a failure of the benchmark's premise."""

    def __init__(self, kube: Kube) -> None:
        self._kube = kube
        self.writes: list[str] = []

    async def get_or_none(self, path: str) -> Any:
        return await self._kube.get_or_none(path)

    def __getattr__(self, verb: str) -> Any:
        async def refused(path: str, *args: Any, **kw: Any) -> Any:
            self.writes.append(f"{verb} {path}")
            raise RuntimeError(f"a pass at rest wrote: {verb} {path}")

        return refused


async def bring_up(cluster: LocalCluster, groups: list[int], size: int, log: Path) -> None:
    async with operated(cluster, log) as kube:
        for g in groups:
            await kube.create(
                resource_path(c.API_VERSION, c.PLURAL, namespace=NAMESPACE),
                lws_manifest(f"g{g}", g, size),
            )
        await wait_for_objects(
            kube,
            resource_path(c.API_VERSION, c.PLURAL, namespace=NAMESPACE),
            lambda objs: all(
                (objs.get(f"{NAMESPACE}/g{g}", {}).get("status") or {}).get("readyReplicas") == g
                for g in groups
            ),
            timeout=900,
            what="every LeaderWorkerSet ready",
        )


async def measure(
    cluster: LocalCluster, groups: list[int], size: int, passes: int, profile: bool = False
) -> tuple[list[Any], str | None]:
    """The rows of the report; with ``profile``, the profile of the largest LWS's passes."""
    rows = []
    profiled = None
    async with await Kube.connect(cluster.kubeconfig()) as kube:
        listing = await kube.list(resource_path(c.API_VERSION, c.PLURAL, namespace=NAMESPACE))
        bodies = {(NAMESPACE, o["metadata"]["name"]): o for o in listing["items"]}
        cache = await cache_of(kube, NAMESPACE, bodies)
        reader = ReadOnly(kube)
        reconciler = Reconciler(cast(Kube, reader), cache, EventRecorder(cast(Kube, reader)))
        for g in groups:
            key = (NAMESPACE, f"g{g}")
            pods = list(cache.observe(key).pods.values())
            for mode in ("one group", "all groups"):
                times = []
                for n in range(passes + 5):
                    pod = pods[n % len(pods)]
                    cache.changed("lws_pods", "MODIFIED", key, pod)
                    if mode == "all groups":
                        cache._groups.pop(key, None)
                    t0 = time.process_time()
                    await reconciler(key)
                    if n >= 5:  # warm-up
                        times.append(time.process_time() - t0)
                if profile and mode == "one group" and g == max(groups):
                    top = await profiled_passes(reconciler, cache, key, pods, passes)
                    profiled = f"{g} groups of {size} pods, {passes} passes\n{top}"
                rows.append(
                    {
                        "groups": g,
                        "pods": g * size,
                        "mode": mode,
                        "median_us": round(statistics.median(times) * 1e6, 1),
                        "p90_us": round(sorted(times)[int(len(times) * 0.9)] * 1e6, 1),
                        "passes": passes,
                    }
                )
        assert not reader.writes, reader.writes
    return rows, profiled


async def profiled_passes(
    reconciler: Reconciler, cache: Any, key: tuple[str, str], pods: list[Any], passes: int
) -> str:
    """The functions taking most of ``passes`` passes' time (cumulative, then own time)."""
    profiler = cProfile.Profile()
    for n in range(passes):
        cache.changed("lws_pods", "MODIFIED", key, pods[n % len(pods)])
        profiler.enable()
        await reconciler(key)
        profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).strip_dirs()
    stats.sort_stats("cumulative").print_stats(40)
    stats.sort_stats("tottime").print_stats(25)
    return out.getvalue()


def report(rows: list[Any], size: int, results: Path = RESULTS) -> str:
    m = machine()
    date = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    results.mkdir(parents=True, exist_ok=True)
    out = {"scenario": "CPU per reconcile pass after one pod event", "date": date}
    (results / "pass-cost.json").write_text(
        json.dumps({**out, "machine": m, "size": size, "rows": rows}, indent=2) + "\n"
    )
    lines = [
        f"# CPU per reconcile pass after one pod event, at rest ({date})",
        "",
        f"Machine: {m['cpus']} CPUs ({m['cpu_model']}), {m['memory_gib']} GiB, Python "
        f"{m['python']}. Groups of {size} pods; process CPU time of one pass, medians.",
        "",
        "| groups | pods | one group observed (µs) | p90 | all groups observed (µs) | p90 |",
        "|---|---|---|---|---|---|",
    ]
    by = {(r["groups"], r["mode"]): r for r in rows}
    for g in sorted({r["groups"] for r in rows}):
        one, every = by[(g, "one group")], by[(g, "all groups")]
        lines.append(
            f"| {g} | {one['pods']} | {one['median_us']} | {one['p90_us']} | "
            f"{every['median_us']} | {every['p90_us']} |"
        )
    text = "\n".join(lines) + "\n"
    (results / "pass-cost.md").write_text(text)
    return text


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.pass_cost")
    parser.add_argument("--groups", default="2,10,100", help="comma-separated group counts")
    parser.add_argument("--size", type=int, default=8)
    parser.add_argument("--passes", type=int, default=200)
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the report goes")
    parser.add_argument("--profile", action="store_true", help="write pass-cost-profile.txt")
    args = parser.parse_args()

    groups = [int(g) for g in args.groups.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp)
        with LocalCluster(ClusterConfig(state_dir=state / "cluster")) as cluster:
            asyncio.run(bring_up(cluster, groups, args.size, state / "operator.log"))
            rows, profiled = asyncio.run(
                measure(cluster, groups, args.size, args.passes, args.profile)
            )
    if profiled is not None:
        (args.out / "pass-cost-profile.txt").write_text(profiled)
    print(report(rows, args.size, args.out))


if __name__ == "__main__":
    main()
