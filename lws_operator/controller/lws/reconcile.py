"""One reconcile of one LeaderWorkerSet: observe (the cache), plan (plan/lws/reconcile.py,
pure), take the plan's steps. This module holds no policy of its own. Level-triggered and
idempotent: any reconcile may be cut short at any step, and the next one (woken by the
resulting events) finishes the job. Returns seconds after which to look again (for what no
watch reports), or None.
"""

from __future__ import annotations

import datetime
import logging
import time
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import ValidationError

from lws_operator.api import constants as c
from lws_operator.api.models import LeaderWorkerSet
from lws_operator.api.validation import first_error
from lws_operator.controller.lws.cache import Cache
from lws_operator.controller.lws.eviction import EvictionCoverage
from lws_operator.controller.lws.evidence import read_logs
from lws_operator.controller.lws.steps import Steps
from lws_operator.controller.runtime.execute import Executor
from lws_operator.controller.runtime.informer import Key
from lws_operator.controller.servers.metrics import NoMetrics, ReconcileMetrics
from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.events import EventRecorder
from lws_operator.plan.events import Event
from lws_operator.plan.events import warning as warning_event
from lws_operator.plan.lws import gang
from lws_operator.plan.lws import reconcile as plan
from lws_operator.plan.lws.backoff import Backoff
from lws_operator.plan.lws.history import Limits
from lws_operator.plan.lws.restart import FAILED_GROUP_GRACE, undecided
from lws_operator.plan.meta import (
    generation_of,
    is_deleting,
    name_of,
    namespace_of,
    resource_version_of,
)

log = logging.getLogger(__name__)

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
    failed_group_grace: int | None = FAILED_GROUP_GRACE
    memory: dict[Key, Memory] = field(default_factory=dict)
    executor: Executor = field(init=False)
    settings: plan.Settings = field(init=False)

    def __post_init__(self) -> None:
        self.executor = Executor(self.kube, self.events)
        self.settings = plan.Settings(
            self.gang_api,
            self.gang_unavailable,
            self.backoff,
            self.history_limits,
            self.failed_group_grace,
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
        anew = memory.workers.take(obs.observed_at)  # first: a pass cut short loses none
        events_at = {i: obs.changed_at[i] for i in anew if i in obs.changed_at}
        lost, memory.lost_decided = undecided(obs.lost, memory.lost_decided)
        obs = replace(obs, lost=lost)
        lws = memory.model[1]
        now = datetime.datetime.now(datetime.UTC)
        try:
            broken = plan.ask(lws, obs, memory, self.settings, now)
            logs = await read_logs(self.kube, lws, broken.ask.reads, self.history_limits)
            steps = plan.plan_pass(
                lws, obs, memory, self.settings, broken, logs, now=now, clock=time.monotonic()
            )
            taker = Steps(
                self.executor,
                self.events,
                self.coverage,
                self.metrics,
                key,
                body,
                memory,
                events_at,
            )
            return await taker.take(steps)
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
        note = f"cannot reconcile: {first_error(error)}"
        log.warning("%s/%s %s", namespace_of(body), name_of(body), note)
        await self.events.post(body, warning_event("InvalidSpec", "Reconcile", note))
