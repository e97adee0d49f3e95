"""A work queue of keys, as controller-runtime's: a key waits at most once in the queue, is
never processed by two workers at once, and a key added while it is being processed is
processed again afterwards. Delayed adds use timers (no polling); failures back off
exponentially per key."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from lws_operator.kube.client import ApiError

log = logging.getLogger(__name__)

# What a handler returns: None when done, or seconds after which to look again.
Handler = Callable[[Any], Awaitable[float | None]]


@dataclass
class WorkQueue:
    handler: Handler
    workers: int = 4
    base_delay: float = 0.05
    max_delay: float = 60.0
    _queue: asyncio.Queue[Hashable] = field(default_factory=asyncio.Queue)
    _queued: set[Hashable] = field(default_factory=set)
    _active: set[Hashable] = field(default_factory=set)
    _dirty: set[Hashable] = field(default_factory=set)
    _failures: dict[Hashable, int] = field(default_factory=dict)
    _timers: dict[Hashable, asyncio.TimerHandle] = field(default_factory=dict)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)
    processed: int = 0
    errors: int = 0
    adds: int = 0  # keys put in the queue (workqueue_adds_total)

    def add(self, key: Hashable) -> None:
        if key in self._active:
            self._dirty.add(key)
        elif key not in self._queued:
            self._queued.add(key)
            self._queue.put_nowait(key)
            self.adds += 1

    def add_after(self, key: Hashable, delay: float) -> None:
        """Add ``key`` after ``delay`` seconds; an earlier pending timer for it wins."""
        if delay <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        existing = self._timers.get(key)
        if existing is not None and existing.when() <= loop.time() + delay:
            return
        if existing is not None:
            existing.cancel()
        self._timers[key] = loop.call_later(delay, self._fire, key)

    def _fire(self, key: Hashable) -> None:
        self._timers.pop(key, None)
        self.add(key)

    def __len__(self) -> int:
        return self._queue.qsize()

    def start(self) -> None:
        for i in range(self.workers):
            self._tasks.append(asyncio.create_task(self._work(), name=f"reconcile-worker-{i}"))

    async def stop(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()

    async def _work(self) -> None:
        while True:
            key = await self._queue.get()
            self._queued.discard(key)
            self._active.add(key)
            try:
                again = await self.handler(key)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                self.errors += 1
                failures = self._failures.get(key, 0) + 1
                self._failures[key] = failures
                delay = min(self.base_delay * 2 ** (failures - 1), self.max_delay)
                if isinstance(e, ApiError) and e.conflict:
                    # Optimistic concurrency at work, not a fault: one line, no traceback.
                    log.warning(
                        "reconcile of %s lost a write to another writer (attempt %d); "
                        "retrying in %.2fs: %s",
                        key,
                        failures,
                        delay,
                        e.message,
                    )
                else:
                    log.exception(
                        "reconcile of %s failed (attempt %d); retrying in %.2fs",
                        key,
                        failures,
                        delay,
                    )
                again = delay
            else:
                self._failures.pop(key, None)
            finally:
                self.processed += 1
                self._active.discard(key)
            if key in self._dirty:
                self._dirty.discard(key)
                self.add(key)
            elif again is not None:
                self.add_after(key, again)
