"""Kubernetes Events (``events.k8s.io/v1``), as upstream's recorder ``leaderworkerset`` writes
them: ``kubectl describe lws`` and ``kubectl events`` show them.

Repeats are aggregated as client-go's events recorder does: the second occurrence of the same
event (type, reason, action, note, about the same object, from this instance) turns the first
Event into a series (``series.count`` 2), later ones only count in memory and are written by
:meth:`EventRecorder.flush` (every minute, and once more when the series ends, after six
minutes without a repeat). A stuck LWS that reports the same Warning every few seconds keeps
one Event object, not thousands. Unlike client-go, the note is part of what makes events the
same (different messages are never merged under the first one) and the object's
resourceVersion is not (its status writes do not start a new series).

Posting is best effort: an event that cannot be written is logged, never raised, so it can
never fail a reconcile."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import os
import secrets
import socket
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.paths import resource_path
from lws_operator.plan.events import Event
from lws_operator.plan.meta import meta_of
from lws_operator.plan.timestamps import format_micros

log = logging.getLogger(__name__)

REPORTING_CONTROLLER = "leaderworkerset"
# The API server rejects notes longer than 1 KiB.
_NOTE_MAX = 1024
# client-go's: a series ends after this long without a repeat; its count is written at least
# this often while it goes on (client-go: every 30 minutes; a minute keeps `describe` honest).
SERIES_FINISH = 6 * 60.0
SERIES_REFRESH = 60.0
# Bounded memory: the oldest series are ended first beyond this many.
MAX_SERIES = 4096


def object_reference(obj: dict[str, Any]) -> dict[str, Any]:
    meta = meta_of(obj)
    ref = {
        "apiVersion": obj.get("apiVersion", ""),
        "kind": obj.get("kind", ""),
        "name": meta.get("name", ""),
        "namespace": meta.get("namespace", ""),
        "uid": meta.get("uid", ""),
    }
    if rv := meta.get("resourceVersion"):
        ref["resourceVersion"] = rv
    return ref


@dataclass
class _Series:
    name: str
    namespace: str
    regarding_uid: str
    count: int
    last_seen: float  # monotonic
    last_observed: str  # series.lastObservedTime
    written: int  # the count last written


class EventRecorder:
    def __init__(
        self,
        kube: Kube,
        instance: str | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        controller: str = REPORTING_CONTROLLER,
    ) -> None:
        self._kube = kube
        self._controller = controller
        self._instance = instance or os.environ.get("POD_NAME") or socket.gethostname()
        self._clock = clock
        self._series: OrderedDict[tuple[str, ...], _Series] = OrderedDict()
        self._flusher: asyncio.Task[None] | None = None
        self.posted = 0  # Event objects created
        self.patched = 0  # series counts written

    def event_body(self, regarding: dict[str, Any], event: Event) -> dict[str, Any]:
        ref = object_reference(regarding)
        return {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {
                "name": f"{ref['name']}.{secrets.token_hex(8)}",
                "namespace": ref["namespace"] or "default",
            },
            "eventTime": format_micros(datetime.datetime.now(datetime.UTC)),
            "reportingController": self._controller,
            "reportingInstance": self._instance,
            "action": event.action,
            "reason": event.reason,
            "note": event.note[:_NOTE_MAX],
            "type": event.type,
            "regarding": ref,
        }

    def _key(self, ref: dict[str, Any], event: Event) -> tuple[str, ...]:
        return (
            event.type,
            event.reason,
            event.action,
            event.note[:_NOTE_MAX],
            *(str(ref.get(k, "")) for k in ("kind", "namespace", "name", "uid")),
        )

    async def post(self, regarding: dict[str, Any], event: Event) -> None:
        body = self.event_body(regarding, event)
        key = self._key(body["regarding"], event)
        now = self._clock()
        if (series := self._series.get(key)) is not None:
            series.count += 1
            series.last_seen = now
            series.last_observed = format_micros(datetime.datetime.now(datetime.UTC))
            self._series.move_to_end(key)
            if series.written == 1:  # the first repeat makes it a series at once
                await self._write_count(series)
            return
        namespace = body["metadata"]["namespace"]
        path = resource_path("events.k8s.io/v1", "events", namespace=namespace)
        try:
            await self._kube.create(path, body)
        except (ApiError, OSError) as e:
            log.warning("could not post event %s/%s: %s", event.reason, event.note, e)
            return
        self.posted += 1
        self._series[key] = _Series(
            body["metadata"]["name"],
            namespace,
            str(body["regarding"].get("uid", "")),
            count=1,
            last_seen=now,
            last_observed=body["eventTime"],
            written=1,
        )
        while len(self._series) > MAX_SERIES:
            _, oldest = self._series.popitem(last=False)
            await self._write_count(oldest)

    async def _write_count(self, series: _Series) -> None:
        if series.count == series.written:
            return
        path = resource_path(
            "events.k8s.io/v1", "events", namespace=series.namespace, name=series.name
        )
        patch = {"series": {"count": series.count, "lastObservedTime": series.last_observed}}
        try:
            await self._kube.patch(path, patch, kind="merge")
        except (ApiError, OSError) as e:
            # Gone (TTL, deleted): the next repeat starts a new Event.
            log.info("could not update event series %s: %s", series.name, e)
        else:
            self.patched += 1
        series.written = series.count

    async def flush(self) -> None:
        """Write the counts that grew since last written; end series idle for SERIES_FINISH."""
        now = self._clock()
        for key, series in list(self._series.items()):
            await self._write_count(series)
            if now - series.last_seen >= SERIES_FINISH:
                self._series.pop(key, None)

    def forget(self, uid: str) -> None:
        """End, without a last write, the series about an object that is gone."""
        for key in [k for k, s in self._series.items() if s.regarding_uid == uid]:
            del self._series[key]

    def __len__(self) -> int:
        return len(self._series)

    def start(self) -> None:
        async def keep_flushing() -> None:
            while True:
                await asyncio.sleep(SERIES_REFRESH)
                await self.flush()

        self._flusher = asyncio.create_task(keep_flushing(), name="event-series")

    async def stop(self) -> None:
        if self._flusher is not None:
            self._flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._flusher
        await self.flush()
