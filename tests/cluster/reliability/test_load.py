"""Load: 200 LeaderWorkerSets of 2 groups x 4 pods (1,600 pods) created at once become
Available, then are all deleted, twice; no operator exception. The operator's memory (VmRSS at
start, VmHWM peak, VmRSS at the end of each cycle, and its live Python heap blocks from
/metrics) is printed (run with -s to see it). Resident memory keeps the Python allocator's
high-water arenas once a load is gone; the second cycle must not raise it by more than 5%: a
plateau, not a leak."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from lws_operator.api import constants as c
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_testbed.operator_process import OperatorProcess
from lws_testbed.wait import Objects, wait_for_objects
from tests.cluster.controller.helpers import is_available, lws_body, lws_path
from tests.cluster.reliability.harness import tracebacks

pytestmark = pytest.mark.reliability_full

COUNT, REPLICAS, SIZE, CYCLES = 200, 2, 4, 2


def memory_kib(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of a process, in KiB."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0])
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="module")
async def own_operator(
    replace_session_operator: Callable[..., contextlib.AbstractAsyncContextManager[Any]],
) -> AsyncIterator[tuple[OperatorProcess, str]]:
    address = f"127.0.0.1:{_free_port()}"
    # Plain HTTP, explicitly: this test reads the heap gauge, not the scrape authorization
    # (tests/cluster/deploy/test_metrics.py).
    async with replace_session_operator(
        "--metrics-bind-address", address, "--metrics-secure=false"
    ) as op:
        yield op, f"http://{address}/metrics"


async def heap_blocks(metrics_url: str) -> int:
    """The operator's live Python heap blocks (its python_heap_allocated_blocks gauge)."""
    async with aiohttp.ClientSession() as session, session.get(metrics_url) as resp:
        for line in (await resp.text()).splitlines():
            if line.startswith("python_heap_allocated_blocks "):
                return int(float(line.split()[1]))
    raise AssertionError(f"no python_heap_allocated_blocks in {metrics_url}")


async def test_200_lws_become_available_and_go_away(
    kube: Kube, namespace: str, own_operator: tuple[OperatorProcess, str]
) -> None:
    ns, (op, metrics_url) = namespace, own_operator
    log_start = len(op.log.read_text(errors="replace"))
    start_blocks = await heap_blocks(metrics_url)
    ends = []
    for cycle in range(CYCLES):
        ends.append(await _cycle(kube, ns, op, metrics_url, cycle))
    op.check_alive()
    found = tracebacks(op.log.read_text(errors="replace")[log_start:])
    assert not found, "\n\n".join(found[:3])
    # The first load leaves resident memory at the allocator's high-water mark; a second load
    # of the same size must reuse it, not add to it. (The live heap blocks are printed, not
    # checked: they include garbage the cycle collector reaches when it will, +-7% here.)
    print(f"live Python heap blocks before any load: {start_blocks}")
    (first_rss, _), (last_rss, _) = ends[0], ends[-1]
    assert last_rss <= first_rss * 1.05, ends


async def _cycle(
    kube: Kube, ns: str, op: OperatorProcess, metrics_url: str, cycle: int
) -> tuple[int, int]:
    """One load cycle; returns the operator's VmRSS (KiB) and live heap blocks at its end."""
    start_mem, start_blocks = memory_kib(op.pid), await heap_blocks(metrics_url)
    gate = asyncio.Semaphore(16)

    async def create(i: int) -> None:
        async with gate:
            await kube.create(lws_path(ns), lws_body(f"l{cycle}-{i}", replicas=REPLICAS, size=SIZE))

    t0 = time.monotonic()
    await asyncio.gather(*(create(i) for i in range(COUNT)))
    created = time.monotonic() - t0

    def all_available(objs: Objects) -> bool:
        return sum(is_available(o, REPLICAS) for o in objs.values()) == COUNT

    def summary(objs: Objects) -> str:
        ready = sum(is_available(o, REPLICAS) for o in objs.values())
        return f"{ready}/{len(objs)} Available"

    await wait_for_objects(
        kube,
        lws_path(ns),
        all_available,
        timeout=900,
        what=f"{COUNT} LWS Available",
        summary=summary,
    )
    available = time.monotonic() - t0
    peak_mem = memory_kib(op.pid)

    t1 = time.monotonic()

    async def delete(i: int) -> None:
        async with gate:
            await kube.delete(lws_path(ns, f"l{cycle}-{i}"), propagation="Background")

    await asyncio.gather(*(delete(i) for i in range(COUNT)))
    await wait_for_objects(
        kube,
        resource_path("v1", "pods", namespace=ns),
        lambda objs: not objs,
        timeout=600,
        what="every LWS pod gone",
        label_selector=c.SET_NAME_LABEL,
        summary=lambda objs: f"{len(objs)} pods left",
    )
    deleted = time.monotonic() - t1
    for api, plural in (("apps/v1", "statefulsets"), ("v1", "services")):
        await wait_for_objects(
            kube,
            resource_path(api, plural, namespace=ns),
            lambda objs: not objs,
            timeout=120,
            what=f"every LWS {plural} gone",
            label_selector=c.SET_NAME_LABEL,
            summary=lambda objs: f"{len(objs)} left",
        )
    end_mem, end_blocks = memory_kib(op.pid), await heap_blocks(metrics_url)
    print(
        f"\nload cycle {cycle + 1}: {COUNT} LWS x {REPLICAS} x {SIZE} = "
        f"{COUNT * REPLICAS * SIZE} pods; "
        f"created in {created:.1f}s, all Available after {available:.1f}s, all pods gone "
        f"{deleted:.1f}s after the deletions; operator VmRSS start {start_mem['VmRSS'] / 1024:.0f}"
        f" MiB, peak (VmHWM) {peak_mem['VmHWM'] / 1024:.0f} MiB, end "
        f"{end_mem['VmRSS'] / 1024:.0f} MiB; live Python heap blocks start {start_blocks}, "
        f"end {end_blocks}"
    )
    return end_mem["VmRSS"], end_blocks
