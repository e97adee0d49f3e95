import asyncio
import itertools
import logging
from collections import Counter

import pytest

from lws_operator.controller.runtime.queue import WorkQueue
from lws_operator.kube.client import ApiError


async def test_a_key_is_processed_once_per_burst_and_never_concurrently() -> None:
    running: set[str] = set()
    calls: Counter[str] = Counter()
    gate = asyncio.Event()
    three_done = asyncio.Event()

    async def handler(key: str) -> None:
        assert key not in running, "a key must never be processed by two workers at once"
        running.add(key)
        calls[key] += 1
        await gate.wait()
        running.discard(key)
        if sum(calls.values()) == 3:
            three_done.set()

    q = WorkQueue(handler, workers=3)
    q.start()
    for _ in range(5):
        q.add("a")
    q.add("b")
    await asyncio.sleep(0)  # let the workers pick them up
    await asyncio.sleep(0)
    q.add("a")  # while "a" runs: once more afterwards, not now
    q.add("a")
    gate.set()
    await asyncio.wait_for(three_done.wait(), 5)
    await q.stop()
    assert calls == {"a": 2, "b": 1}


async def test_failures_back_off_and_requeue_after_asks_again() -> None:
    seen: list[float] = []
    loop = asyncio.get_running_loop()
    done = asyncio.Event()

    async def handler(key: str) -> float | None:
        seen.append(loop.time())
        if len(seen) < 3:
            raise RuntimeError("boom")
        if len(seen) == 3:
            return 0.05  # look again soon
        done.set()
        return None

    q = WorkQueue(handler, workers=1, base_delay=0.02)
    q.start()
    q.add("k")
    await asyncio.wait_for(done.wait(), 5)
    await q.stop()
    gaps = [b - a for a, b in itertools.pairwise(seen)]
    assert len(seen) == 4 and q.errors == 2
    assert gaps[0] >= 0.015 and gaps[1] >= 0.035  # 0.02, then 0.04
    assert gaps[2] >= 0.045


async def test_earlier_timer_wins() -> None:
    fired = asyncio.Event()

    async def handler(key: str) -> None:
        fired.set()

    q = WorkQueue(handler, workers=1)
    q.start()
    q.add_after("k", 10)
    q.add_after("k", 0.01)
    await asyncio.wait_for(fired.wait(), 2)
    await q.stop()


async def test_a_lost_write_is_retried_with_one_line_and_no_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    done = asyncio.Event()
    errors = [
        ApiError(409, "Conflict", "the object has been modified", None),
        RuntimeError("boom"),
    ]

    async def handler(key: str) -> float | None:
        if errors:
            raise errors.pop(0)
        done.set()
        return None

    q = WorkQueue(handler, workers=1, base_delay=0.01)
    q.start()
    with caplog.at_level(logging.WARNING, logger="lws_operator.controller.runtime.queue"):
        q.add("k")
        await asyncio.wait_for(done.wait(), 5)
    await q.stop()
    lost, failed = caplog.records
    assert lost.levelno == logging.WARNING and lost.exc_info is None
    assert "lost a write" in lost.getMessage() and "has been modified" in lost.getMessage()
    assert failed.levelno == logging.ERROR and failed.exc_info is not None
    assert q.errors == 2


def test_already_exists_is_not_a_conflict() -> None:
    exists = ApiError(409, "AlreadyExists", 'services "x" already exists', None)
    lost = ApiError(409, "Conflict", "the object has been modified", None)
    assert exists.already_exists and not exists.conflict
    assert lost.conflict and not lost.already_exists
