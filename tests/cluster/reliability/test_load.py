"""Load: 200 LeaderWorkerSets of 2 groups x 4 pods (1,600 pods) created at once become
Available, then are all deleted, twice; no operator exception; the operator's memory (VmRSS at
start, VmHWM peak, VmRSS at the end of each cycle) is printed (run with -s to see it): the
second cycle shows whether what the first one kept is a plateau or a leak."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from lws_operator.api import constants as c
from lws_operator.cluster.operator_process import OperatorProcess
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_operator.kube.wait import Objects, wait_for_objects
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


@pytest.fixture(scope="module")
async def own_operator(
    replace_session_operator: Callable[..., contextlib.AbstractAsyncContextManager[Any]],
) -> AsyncIterator[OperatorProcess]:
    async with replace_session_operator() as op:
        yield op


async def test_200_lws_become_available_and_go_away(
    kube: Kube, namespace: str, own_operator: OperatorProcess
) -> None:
    ns, op = namespace, own_operator
    log_start = len(op.log.read_text(errors="replace"))
    for cycle in range(CYCLES):
        await _cycle(kube, ns, op, cycle)
    op.check_alive()
    found = tracebacks(op.log.read_text(errors="replace")[log_start:])
    assert not found, "\n\n".join(found[:3])


async def _cycle(kube: Kube, ns: str, op: OperatorProcess, cycle: int) -> None:
    start_mem = memory_kib(op.pid)
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
    end_mem = memory_kib(op.pid)
    print(
        f"\nload cycle {cycle + 1}: {COUNT} LWS x {REPLICAS} x {SIZE} = "
        f"{COUNT * REPLICAS * SIZE} pods; "
        f"created in {created:.1f}s, all Available after {available:.1f}s, all pods gone "
        f"{deleted:.1f}s after the deletions; operator VmRSS start {start_mem['VmRSS'] / 1024:.0f}"
        f" MiB, peak (VmHWM) {peak_mem['VmHWM'] / 1024:.0f} MiB, end "
        f"{end_mem['VmRSS'] / 1024:.0f} MiB"
    )
