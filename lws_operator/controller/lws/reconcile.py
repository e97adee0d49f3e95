"""One reconcile of one LeaderWorkerSet: observe (the cache), plan (plan/lws/reconcile.py,
pure), take the plan's steps. This module holds no policy of its own. Level-triggered and
idempotent: any reconcile may be cut short at any step, and the next one (woken by the
resulting events) finishes the job. Returns seconds after which to look again (for what no
watch reports), or None.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import aiohttp
from pydantic import ValidationError

from lws_operator.api import constants as c
from lws_operator.api.models import LeaderWorkerSet
from lws_operator.controller.lws.cache import Cache
from lws_operator.controller.lws.eviction import EvictionCoverage
from lws_operator.controller.runtime.execute import Executor, write_path
from lws_operator.controller.runtime.informer import Key
from lws_operator.controller.servers.metrics import NoMetrics, ReconcileMetrics
from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.events import EventRecorder
from lws_operator.kube.paths import resource_path
from lws_operator.plan.events import Event
from lws_operator.plan.events import warning as warning_event
from lws_operator.plan.lws import gang
from lws_operator.plan.lws import reconcile as plan
from lws_operator.plan.lws.backoff import Backoff
from lws_operator.plan.lws.evidence import LogRequest, log_tail, log_unavailable, transfer_limit
from lws_operator.plan.lws.history import History, HistoryWrite, Limits
from lws_operator.plan.lws.restart import undecided
from lws_operator.plan.lws.status import StatusPacing
from lws_operator.plan.lws.workers import (
    FOREIGN_RETRY,
    NOTHING,
    WorkerPlan,
    foreign_workers,
    is_foreign_workers,
)
from lws_operator.plan.meta import generation_of, is_deleting, name_of, resource_version_of, uid_of
from lws_operator.plan.writes import Write

log = logging.getLogger(__name__)

# Warnings remembered as reported, per LWS, at most this many (a plain bound).
MEMO_MAX = 4096
Memory = plan.Memory


@dataclass
class Reconciler:
    kube: Kube
    cache: Cache
    events: EventRecorder
    # Gang scheduling: a PodGroup per group, of this provider and API (plan/lws/gang.py).
    gang_api: gang.GangApi | None = None
    # A gang provider configured whose PodGroups this cluster cannot serve: this Warning goes
    # once on each LWS, run without gangs.
    gang_unavailable: Event | None = None
    metrics: ReconcileMetrics = field(default_factory=NoMetrics)
    # The eviction webhook's configuration: each LWS is covered before its objects exist.
    coverage: EvictionCoverage | None = None
    backoff: Backoff = field(default_factory=Backoff)
    history_limits: Limits = field(default_factory=Limits)
    memory: dict[Key, Memory] = field(default_factory=dict)
    executor: Executor = field(init=False)
    settings: plan.Settings = field(init=False)

    def __post_init__(self) -> None:
        self.executor = Executor(self.kube, self.events)
        self.settings = plan.Settings(
            self.gang_api, self.gang_unavailable, self.backoff, self.history_limits
        )

    def forget(self, key: Key) -> None:
        """Drop everything kept about an LWS that is gone (or going)."""
        self.metrics.forget(key)
        if self.coverage is not None:
            self.coverage.forget(key)
        memory = self.memory.pop(key, None)
        if memory is not None and memory.model is not None:
            self.events.forget(str(memory.model[1].metadata.get("uid", "")))

    async def __call__(self, key: Key) -> float | None:
        await self.cache.wait_synced()
        obs = self.cache.observe(key)
        body = obs.lws
        if body is None or is_deleting(body):
            self.forget(key)
            return None
        memory = self.memory.setdefault(key, Memory())
        rv = resource_version_of(body)
        if memory.model is None or memory.model[0] != rv:
            try:
                memory.model = (rv, LeaderWorkerSet.model_validate(body))
            except ValidationError as e:
                await self._report_invalid(body, e, memory)
                return None
        memory.workers.take(obs.observed_at)  # first: a pass cut short must not lose them
        lost, memory.lost_decided = undecided(obs.lost, memory.lost_decided)
        obs = replace(obs, lost=lost)
        lws = memory.model[1]
        now = datetime.datetime.now(datetime.UTC)
        try:
            broken = plan.ask(lws, obs, memory, self.settings, now)
            logs = await self._read_logs(lws, broken.ask.reads)
            steps = plan.plan_pass(
                lws, obs, memory, self.settings, broken, logs, now=now, clock=time.monotonic()
            )
            return await _Steps(self, key, body, memory).take(steps)
        except ApiError as e:
            if e.status == 403 and "being terminated" in e.message:
                return None  # its namespace is going away, and everything in it
            if e.status == 404 and (
                f'namespaces "{lws.namespace}" not found' in e.message
                or f'{c.PLURAL}.{c.GROUP} "{lws.name}" not found' in e.message
            ):
                return None  # it, or its namespace, is gone already (the cache has yet to see)
            raise

    async def _report_invalid(
        self, body: dict[str, Any], error: ValidationError, memory: Memory
    ) -> None:
        generation = generation_of(body)
        if generation in memory.reported_invalid:
            return
        memory.reported_invalid.add(generation)
        first = error.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        note = f"cannot reconcile: {where}: {first.get('msg')}"
        meta = body.get("metadata") or {}
        log.warning("%s/%s %s", meta.get("namespace"), meta.get("name"), note)
        await self.events.post(body, warning_event("InvalidSpec", "Reconcile", note))

    async def _read_logs(
        self, lws: LeaderWorkerSet, reads: Sequence[tuple[int, LogRequest]]
    ) -> list[tuple[str | None, str]]:
        """The log tails a recreation's evidence asks for, read together."""
        if not reads:
            return []
        limits = self.settings.history_limits
        started = time.monotonic()
        results = await asyncio.gather(
            *(self._log_tail(lws.namespace, r, limits) for _, r in reads)
        )
        if (took := time.monotonic() - started) > 0.5:
            log.info(
                "%s/%s: reading %d log tail(s) before a recreation took %.1fs",
                lws.namespace,
                lws.name,
                len(reads),
                took,
            )
        return list(results)

    async def _log_tail(
        self, namespace: str, req: LogRequest, limits: Limits
    ) -> tuple[str | None, str]:
        """The container's log tail through the API (``pods/<name>/log``), or why not."""
        path = resource_path("v1", "pods", namespace=namespace, name=req.pod, subresource="log")
        try:
            raw = await self.kube.read_bytes(
                path,
                query=req.query(limits),
                timeout=limits.log_timeout,
                max_bytes=transfer_limit(limits),
            )
        except ApiError as e:
            return None, log_unavailable(f"{e.status} {e.message}")
        except (TimeoutError, aiohttp.ClientError) as e:
            return None, log_unavailable(f"{type(e).__name__} {e}".strip())
        text = log_tail(raw, limits)
        return (text, "") if text else (None, log_unavailable("the log is empty"))


class _Steps:
    """Takes one pass's steps in order, for one LWS."""

    def __init__(self, r: Reconciler, key: Key, body: dict[str, Any], memory: Memory) -> None:
        self.r, self.key, self.body, self.memory = r, key, body, memory
        self.ns, self.name = key
        self.retry: float | None = None

    async def take(self, p: plan.PassPlan) -> float | None:
        self.retry = p.retry
        for step in p.steps:
            await self._take(step)
        return self.retry

    def _look_again_in(self, seconds: float) -> None:
        self.retry = seconds if self.retry is None else min(self.retry, seconds)

    async def _send(self, write: Write) -> dict[str, Any] | None:
        return await self.r.executor.send(self.ns, self.body, write)

    async def _post(self, event: Event) -> None:
        await self.r.events.post(self.body, event)

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
                if self.r.coverage is not None:
                    await self.r.coverage.cover(self.key)
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
                self.r.metrics.groups_observed(
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
        reported = self.memory.reported
        if len(reported) >= MEMO_MAX:
            reported.clear()  # a plain bound: at worst one report again
        if about not in reported:
            reported.add(about)
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
            log.info(
                "%s/%s: %s (%s)",
                self.ns,
                self.name,
                done.note,
                done.why,
                extra={"group": done.index},
            )
            self.r.metrics.group_recreated(self.ns, self.name, done.why)
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
        if is_foreign_workers(await self.r.kube.get_or_none(write_path(self.ns, create))):
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
