"""One reconcile of one DisaggregatedSet: read the cached state, let ``plan/ds/reconcile.py``
decide, make its writes in order and post their events. Level-triggered and idempotent: a pass
cut short anywhere is finished by the next, woken by the events of what it wrote (a child
LeaderWorkerSet's status, a Service, a scaler), so a rollout waiting for its new groups to be
ready needs no timer."""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from lws_operator.api import ds_constants as c
from lws_operator.api.ds_models import DisaggregatedSet
from lws_operator.api.validation import first_error
from lws_operator.controller.ds.cache import DsCache
from lws_operator.controller.runtime.execute import Executor, write_path
from lws_operator.controller.runtime.informer import Key
from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.events import EventRecorder
from lws_operator.plan.ds.reconcile import (
    FAILED_CREATE,
    SCALER_CONFLICT,
    failed_create,
    plan_disaggregated_set,
)
from lws_operator.plan.events import Event, ReportedOnce, warning
from lws_operator.plan.gojson import GoJsonError
from lws_operator.plan.keys import OwnerKey
from lws_operator.plan.meta import is_controlled_by, is_deleting, name_of, namespace_of
from lws_operator.plan.timestamps import format_time
from lws_operator.plan.writes import Write

log = logging.getLogger(__name__)

# Looked at again after a write the API server refused (a retry with backoff comes anyway).
RETRY = 30.0


@dataclass
class DsReconciler:
    kube: Kube
    cache: DsCache
    events: EventRecorder
    ready_groups: Callable[[Key], int | None] = lambda key: None
    """The ready groups of a child LWS as the LeaderWorkerSet controller of this process sees
    them (None when it does not know the LWS)."""
    reported: dict[Key, ReportedOnce] = field(default_factory=dict)
    """Per set, the problems already reported (one Warning each until they change)."""

    executor: Executor = field(init=False)

    def __post_init__(self) -> None:
        self.executor = Executor(self.kube, self.events)

    async def __call__(self, key: Key) -> float | None:
        await self.cache.wait_ready()
        obs = self.cache.observe(key)
        if obs.ds is None or is_deleting(obs.ds):
            self.reported.pop(key, None)
            return None  # the garbage collector removes its children
        try:
            ds = DisaggregatedSet.model_validate(obs.ds)
            plan = plan_disaggregated_set(
                ds,
                body=obs.ds,
                lws=obs.lws,
                services=obs.services,
                scalers=obs.scalers,
                now=format_time(datetime.datetime.now(datetime.UTC)),
                ready=self._ready(key[0], obs.lws),
            )
        except (ValidationError, GoJsonError) as e:
            note = f"cannot reconcile: {_one_line(e)}"
            await self._report(key, obs.ds, warning("InvalidSpec", "Reconcile", note))
            return None
        for event in plan.events:
            await self.events.post(obs.ds, event)
        retry: float | None = None
        for write in plan.writes:
            try:
                await self._apply(ds, obs.ds, write)
            except ApiError as e:
                if e.conflict and write.verb != "create":
                    raise  # written from a stale view: the queue retries with fresh state
                if e.status == 403 and "being terminated" in e.message:
                    return None  # its namespace is going away, and everything in it
                await self._report(key, obs.ds, _refused(write, e.message))
                retry = RETRY
        if retry is None:
            self.reported.pop(key, None)  # all went through: report anew what comes back
        return retry

    def _ready(self, ns: str, children: Any) -> dict[str, int]:
        out = {}
        for name in children:
            if (n := self.ready_groups(OwnerKey(ns, name))) is not None:
                out[name] = n
        return out

    async def _apply(self, ds: DisaggregatedSet, body: dict[str, Any], write: Write) -> None:
        try:
            answer = await self.executor.send(ds.namespace, body, write)
        except ApiError as e:
            if write.verb == "delete" and e.conflict:
                return  # another object of that name now: not the one we meant
            raise
        if answer is None and write.verb == "create":
            await self._exists(ds, body, write)

    async def _exists(self, ds: DisaggregatedSet, body: dict[str, Any], write: Write) -> None:
        """A create found the name taken: ours not seen yet by the cache (nothing to do), or
        someone else's, which is never adopted (reported once)."""
        current = await self.kube.get_or_none(write_path(ds.namespace, write))
        if current is None or is_controlled_by(current, ds.uid):
            return
        note = f"{write.kind} {write.name} exists but is not controlled by this DisaggregatedSet"
        if write.kind == c.SCALER_KIND:
            reason, note = SCALER_CONFLICT, note + "; not adopting"
        else:
            reason = FAILED_CREATE
        await self._report(OwnerKey(ds.namespace, ds.name), body, warning(reason, "Create", note))

    async def _report(self, key: Key, body: dict[str, Any], event: Event) -> None:
        """Post a Warning once per set and note (a stuck write is retried, not re-reported)."""
        if not self.reported.setdefault(key, ReportedOnce()).first(event.note):
            return
        log.warning("%s/%s: %s", namespace_of(body), name_of(body), event.note)
        await self.events.post(body, event)


def _refused(write: Write, message: str) -> Event:
    if write.verb == "create":
        return failed_create(write.kind, write.name, message)
    what = f"{write.verb} {write.kind} {write.name}"
    return warning("FailedUpdate", "Update", f"Failed to {what}: {message}")


def _one_line(e: Exception) -> str:
    if isinstance(e, ValidationError):
        return first_error(e)
    return " ".join(str(e).split())
