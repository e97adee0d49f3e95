"""Takes the steps of one LeaderWorkerSet pass (plan/lws/reconcile.py) in order: sends the
writes through the executor, posts the events, reports Warnings once, deletes groups leader
first, creates each group's workers, and remembers what the steps say to remember."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from lws_operator.api import constants as c
from lws_operator.controller.lws.eviction import EvictionCoverage
from lws_operator.controller.runtime.execute import Executor, write_path
from lws_operator.controller.runtime.informer import Key
from lws_operator.controller.servers.metrics import ReconcileMetrics
from lws_operator.kube.client import ApiError
from lws_operator.kube.events import EventRecorder
from lws_operator.plan.events import Event
from lws_operator.plan.lws import gang
from lws_operator.plan.lws import reconcile as plan
from lws_operator.plan.lws.history import History, HistoryWrite
from lws_operator.plan.lws.status import StatusPacing
from lws_operator.plan.lws.workers import (
    FOREIGN_RETRY,
    NOTHING,
    WorkerPlan,
    foreign_workers,
    is_foreign_workers,
)
from lws_operator.plan.meta import name_of, resource_version_of, uid_of
from lws_operator.plan.writes import Write

log = logging.getLogger(__name__)
Memory = plan.Memory


@dataclass
class Steps:
    """Takes one pass's steps in order, for one LWS (``body``, as observed)."""

    executor: Executor
    events: EventRecorder
    coverage: EvictionCoverage | None
    metrics: ReconcileMetrics
    key: Key
    body: dict[str, Any]
    memory: Memory
    events_at: Mapping[int, float]
    """The groups observed anew since the pass before, each with when the event arrived that
    its observation follows (plan/lws/observed.py): a recreation of one of them reports its
    reaction time; one decided later (after a backoff, on a request) has none."""
    retry: float | None = None

    @property
    def ns(self) -> str:
        return self.key[0]

    @property
    def name(self) -> str:
        return self.key[1]

    async def take(self, p: plan.PassPlan) -> float | None:
        self.retry = p.retry
        for step in p.steps:
            await self._take(step)
        return self.retry

    def _look_again_in(self, seconds: float) -> None:
        self.retry = seconds if self.retry is None else min(self.retry, seconds)

    async def _send(self, write: Write) -> dict[str, Any] | None:
        return await self.executor.send(self.ns, self.body, write)

    async def _post(self, event: Event) -> None:
        await self.events.post(self.body, event)

    async def _take(self, step: plan.Step) -> None:
        match step:
            case plan.Send(write):
                await self._send(write)
            case plan.Post(event, log_it):
                if log_it:
                    log.info("%s/%s: %s", self.ns, self.name, event.note)
                await self._post(event)
            case plan.Report(about, event, log_it):
                await self._report_once(about, event, log_it)
            case plan.Cover():
                if self.coverage is not None:
                    await self.coverage.cover(self.key)
            case plan.DeleteGroup():
                await self._delete_group(step)
            case plan.Workers(workers):
                await self._workers(workers)
            case plan.WriteHistory(old, write, new):
                await self._write_history(old, write, new)
            case plan.Status(pacing, patch, at, events):
                self.memory.pacing = pacing
                if patch is not None:
                    await self._write_status(pacing, patch, at, events)
            case plan.Decided(lost, settled):
                self.memory.lost_decided |= lost
                for index in settled:
                    self.memory.workers.planned(index, NOTHING)
            case plan.GroupsObserved(groups, key, size, replicas, update_done):
                self.metrics.groups_observed(
                    self.ns, self.name, groups, key, size, replicas, update_done
                )

    async def _write_status(
        self, pacing: StatusPacing, patch: dict[str, Any], at: float, events: tuple[Event, ...]
    ) -> None:
        # Refused (409) when computed from a stale LWS: the queue retries with fresh state.
        after = await self._send(Write("status", c.KIND, self.name, body=patch)) or {}
        rv = patch["metadata"]["resourceVersion"]
        moved = resource_version_of(after) != rv
        self.memory.pacing = pacing.written(at, over=rv if moved else None)
        for event in events:
            await self._post(event)

    async def _report_once(self, about: tuple[str, ...], event: Event, log_it: bool) -> None:
        if self.memory.reported.first(about):
            if log_it:
                log.warning("%s/%s: %s", self.ns, self.name, event.note)
            await self._post(event)

    async def _delete_group(self, step: plan.DeleteGroup) -> None:
        first, *rest = step.writes
        await self._send(first)
        self.memory.lost_decided |= step.settle
        results = await asyncio.gather(*map(self._send, rest), return_exceptions=True)
        for write, result in zip(rest, results, strict=True):
            if isinstance(result, ApiError):
                log.warning(
                    "%s/%s: deleting %s failed (%s); the garbage collector removes it with "
                    "the old leader",
                    self.ns,
                    self.name,
                    write.name,
                    result.message,
                    extra={"group": step.index},
                )
            elif isinstance(result, BaseException):
                raise result
        if (done := step.recreated) is not None:
            since = self.events_at.get(done.index)
            reaction = None if since is None else time.monotonic() - since
            timing = "not on an event"
            if reaction is not None:
                timing = f"{reaction * 1000:.0f} ms after the event"
            log.info(
                "%s/%s: %s (%s; %s)",
                self.ns,
                self.name,
                done.note,
                done.why,
                timing,
                extra={"group": done.index},
            )
            self.metrics.group_recreated(self.ns, self.name, done.why, reaction)
            await self._post(done.event)

    async def _workers(self, workers: WorkerPlan) -> None:
        for event in workers.events:
            await self._post(event)
        if workers.service is not None:
            await self._send(plan.create_service(workers.service))
        if workers.pod_group is not None and not await self._pod_group(workers.pod_group):
            return
        if workers.delete_stale is not None:
            # Foreground, as the garbage collector would (its finalizer): its pods go first,
            # since Kueue ungates at once a pod whose StatefulSet it cannot find.
            stale = workers.delete_stale
            await self._send(
                Write(
                    "delete", plan.STS, name_of(stale), uid=uid_of(stale), propagation="Foreground"
                )
            )
        if workers.workers is None:
            return
        name = name_of(workers.workers)
        create = Write(
            "create",
            plan.STS,
            name,
            body=workers.workers,
            event=workers.created,
            refused=workers.failed.failed,
        )
        if await self._send(create) is not None:
            return
        # It exists but the cache does not show it as this leader's: ours not seen yet, or
        # someone else's without our labels, which we must neither adopt nor delete.
        if is_foreign_workers(await self.executor.kube.get_or_none(write_path(self.ns, create))):
            await self._post(foreign_workers(name))
            self._look_again_in(FOREIGN_RETRY)

    async def _pod_group(self, body: dict[str, Any]) -> bool:
        """Create the group's PodGroup before its workers (upstream's PodReconciler.Reconcile,
        pkg/controllers/pod_controller.go). False when it could not be created (reported;
        looked at again later)."""
        api = str(body["apiVersion"])
        try:
            await self._send(Write("create", "PodGroup", name_of(body), body=body, api_version=api))
        except ApiError as e:
            await self._post(gang.creation_failed(name_of(body), api, e.status, e.message))
            self._look_again_in(gang.CREATE_RETRY)
            return False
        return True

    async def _write_history(self, old: History, write: HistoryWrite, new: History) -> None:
        """Write the history ConfigMap; a conflict (someone wrote since the cache's copy)
        fails the pass, which the queue retries with fresh state."""
        if write.create is not None:
            name = name_of(write.create)
            cm = Write("create", "ConfigMap", name, body=write.create, exists_ok=False)
        else:
            cm = Write("patch", "ConfigMap", new.name, body=write.patch)
        written = await self._send(cm)
        assert written is not None  # a create that found the name taken was refused
        new = replace(new, resource_version=resource_version_of(written))
        stale = self.memory.history[0] if self.memory.history is not None else set()
        self.memory.history = ({*stale, old.resource_version or ""}, new)
