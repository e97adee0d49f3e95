"""One reconcile of one LeaderWorkerSet: read the cached state, let the pure planners in
``plan/`` decide, write what they ask for. This module only sequences and applies: it holds no
policy of its own. Level-triggered and idempotent: any reconcile may be cut short at any line,
and the next one (woken by the resulting events) finishes the job.

Order: eviction coverage → revision → moves (evictions) → leader StatefulSet → shared
Service → groups released by moves → group recreations → each group's workers → stuck pods →
status → revision history. Returns seconds after which to look again
(for what no watch reports), or None.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import aiohttp
from pydantic import ValidationError

from lws_operator.api import constants as c
from lws_operator.api.models import LeaderWorkerSet, LeaderWorkerSetSpec, SubdomainPolicy
from lws_operator.controller.lws.cache import Cache, Observed
from lws_operator.controller.lws.eviction import EvictionCoverage
from lws_operator.controller.runtime.execute import Executor, write_path
from lws_operator.controller.runtime.informer import Key
from lws_operator.controller.servers.metrics import NoMetrics, ReconcileMetrics
from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.events import EventRecorder
from lws_operator.kube.paths import resource_path
from lws_operator.plan.events import Event
from lws_operator.plan.events import warning as warning_event
from lws_operator.plan.lws import disruption, gang, recovery
from lws_operator.plan.lws import revision as rev
from lws_operator.plan.lws.backoff import Backoff
from lws_operator.plan.lws.evidence import (
    LogRequest,
    log_tail,
    log_unavailable,
    transfer_limit,
)
from lws_operator.plan.lws.groups import Group, made_by_groups
from lws_operator.plan.lws.history import (
    History,
    HistoryWrite,
    Limits,
    parse_history,
)
from lws_operator.plan.lws.leader import LeaderStep, foreign_leader, plan_leader
from lws_operator.plan.lws.restart import (
    Recreate,
    group_deletion,
    plan_recreations,
    stuck_pods,
    undecided,
)
from lws_operator.plan.lws.rollout import RolloutPlan, plan_rollout, rollout_input
from lws_operator.plan.lws.services import (
    missing_shared_service,
    publish_not_ready,
    publish_patches,
    service_failed,
)
from lws_operator.plan.lws.status import StatusPacing, compute_status, plan_status_write
from lws_operator.plan.lws.workers import (
    FOREIGN_RETRY,
    WorkerPlan,
    WorkersDue,
    foreign_workers,
    is_foreign_workers,
    plan_workers,
    worker_inputs,
)
from lws_operator.plan.meta import is_deleting, name_of, resource_version_of, uid_of
from lws_operator.plan.timestamps import format_time
from lws_operator.plan.writes import Write

log = logging.getLogger(__name__)

STS = "StatefulSet"
# Warnings remembered as reported, per LWS, at most this many (a plain bound).
MEMO_MAX = 4096
# Memoised pure results kept per LWS at most this many: a few revisions and the latest
# history ConfigMap (a plain bound; entries are cheap to redo).
RESULTS_MAX = 64
T = TypeVar("T")


class _Memo:
    """A bounded memo of pure results: re-validating stored revisions on every pod event
    would dominate a pass."""

    def __init__(self) -> None:
        self._values: dict[tuple[Any, ...], Any] = {}

    def get(self, key: tuple[Any, ...], compute: Callable[[], T]) -> T:
        if key in self._values:
            value: T = self._values[key]
            return value
        if len(self._values) >= RESULTS_MAX:
            self._values.clear()
        value = self._values[key] = compute()
        return value


@dataclass
class Memory:
    """What the reconciler remembers of one LWS between passes, forgotten with it."""

    reported_invalid: set[int] = field(default_factory=set)
    """Generations already reported invalid: one Warning each."""
    pacing: StatusPacing = field(default_factory=StatusPacing)
    """When its status was last written, and the counters held back since (plan/lws/status.py)."""
    model: tuple[str, LeaderWorkerSet] | None = None
    """The validated LWS, by the resourceVersion it was read at."""
    history: tuple[set[str], History] | None = None
    """The history ConfigMap as last written, and the resourceVersions it supersedes (the
    cache may still show one of them for a moment after the write)."""
    reported: set[tuple[str, ...]] = field(default_factory=set)
    """Warnings already reported, by what they are about (one each): node problems, invalid
    requests and budgets, claims a revision cannot apply, a history ConfigMap not ours."""
    leader: tuple[tuple[Any, ...], LeaderStep] | None = None
    """The last leader StatefulSet step, by what it was planned from (``_leader_step``)."""
    results: _Memo = field(default_factory=_Memo)
    """Pure results derived from its revisions and history (validated revision specs), kept
    while it exists: in one memo for every LWS they outlived their LWS."""
    workers: WorkersDue = field(default_factory=WorkersDue)
    """The groups whose workers to plan again (plan/lws/workers.py)."""
    lost_decided: set[str] = field(default_factory=set)
    """The deleted worker pods (uids) already decided on: the cache keeps their records while
    their worker StatefulSet exists; kept only while the cache still shows them."""


def _version(obj: dict[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("uid")), str(meta.get("resourceVersion"))


def _identity(obj: dict[str, Any]) -> tuple[Any, ...]:
    """What a plan made from the object's spec and metadata depends on, without what its
    status updates change: the resourceVersion, the status managers' managedFields (the
    StatefulSet controller's readyReplicas, our own LWS status writes). The generation
    stands for the spec."""
    meta = obj.get("metadata") or {}
    return (
        meta.get("uid"),
        meta.get("generation"),
        meta.get("labels"),
        meta.get("annotations"),
        meta.get("ownerReferences"),
        [f for f in meta.get("managedFields") or [] if f.get("subresource") != "status"],
    )


def _create_service(body: dict[str, Any]) -> Write:
    return Write("create", "Service", name_of(body), body=body, refused=service_failed)


def _spec_version(lws: LeaderWorkerSet) -> tuple[str, int]:
    """The LWS's spec is the same while its uid and generation are."""
    return str(lws.metadata.get("uid")), int(lws.metadata.get("generation") or 0)


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
        if obs.lws is None or is_deleting(obs.lws):
            self.forget(key)
            return None
        memory = self.memory.setdefault(key, Memory())
        rv = str((obs.lws.get("metadata") or {}).get("resourceVersion"))
        if memory.model is None or memory.model[0] != rv:
            try:
                memory.model = (rv, LeaderWorkerSet.model_validate(obs.lws))
            except ValidationError as e:
                await self._report_invalid(obs.lws, e, memory)
                return None
        memory.workers.take(obs.observed_at)  # first: a pass cut short must not lose them
        lost, memory.lost_decided = undecided(obs.lost, memory.lost_decided)
        obs = replace(obs, lost=lost)
        lws = memory.model[1]
        try:
            return await _Reconcile(self, key, lws, obs, memory).run()
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
        meta = body.get("metadata") or {}
        generation = int(meta.get("generation") or 0)
        if generation in memory.reported_invalid:
            return
        memory.reported_invalid.add(generation)
        first = error.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        note = f"cannot reconcile: {where}: {first.get('msg')}"
        log.warning("%s/%s %s", meta.get("namespace"), meta.get("name"), note)
        await self.events.post(body, warning_event("InvalidSpec", "Reconcile", note))


class _Reconcile:
    """One reconcile of one LWS: what it observed, and what it found on the way (when to
    look again, the Failed groups, the revisions' specs looked up)."""

    def __init__(
        self, r: Reconciler, key: Key, lws: LeaderWorkerSet, obs: Observed, memory: Memory
    ) -> None:
        self.r, self.key, self.lws, self.obs, self.memory = r, key, lws, obs, memory
        self.kube = r.kube
        self.executor = Executor(r.kube, r.events)
        self.name, self.ns = lws.name, lws.namespace
        self.uid = str(lws.metadata.get("uid", ""))
        self.body = obs.lws or {}
        self.retry: float | None = None
        self.failed: tuple[int, ...] = ()
        self.specs: dict[str, LeaderWorkerSetSpec | None] = {}

    def _look_again_in(self, seconds: float | None) -> None:
        if seconds is not None:
            self.retry = seconds if self.retry is None else min(self.retry, seconds)

    async def _send(self, write: Write) -> dict[str, Any] | None:
        return await self.executor.send(self.ns, self.body, write)

    async def _post(self, event: Event) -> None:
        await self.r.events.post(self.body, event)

    def _matches(self, revision: dict[str, Any]) -> bool:
        key = ("matches", *_version(revision), *_spec_version(self.lws))
        return self.memory.results.get(key, lambda: rev.matches(revision, self.lws.spec))

    def _spec_at(self, revision: dict[str, Any]) -> LeaderWorkerSetSpec:
        key = ("spec", *_version(revision), *_spec_version(self.lws))
        return self.memory.results.get(key, lambda: rev.spec_at_revision(self.lws.spec, revision))

    async def run(self) -> float | None:
        lws, obs = self.lws, self.obs
        leader_sts = obs.statefulsets.get(self.name)
        if (blocked := foreign_leader(lws, leader_sts)) is not None:
            await self._post(blocked)
            return None  # never touched; its removal wakes us
        if leader_sts is not None and is_deleting(leader_sts):
            return None  # its deletion wakes us
        if self.r.gang_unavailable is not None:  # the operator logged it once at start-up
            await self._report_once(("gang",), self.r.gang_unavailable, log_it=False)
        if self.r.coverage is not None:
            await self.r.coverage.cover(self.key)
        choice = rev.choose_revision(
            lws,
            leader_sts=leader_sts,
            revisions=obs.revisions,
            matches=lambda r: self._matches(dict(r)),
        )
        if choice.create is not None:
            create = choice.create
            await self._send(Write("create", "ControllerRevision", name_of(create), body=create))
            await self._post(rev.creating_revision(choice.note))
        size = lws.spec.leader_worker_template.size
        groups = obs.groups
        moves = disruption.read_state(leader_sts)
        rollout = plan_rollout(
            disruption.rollout_view(
                rollout_input(
                    spec=lws.spec,
                    leader_sts=leader_sts,
                    groups=groups,
                    key=choice.key,
                    revision_changed=choice.changed,
                ),
                moves,
            )
        )
        moved = await self._moves(leader_sts, moves, rollout, choice.changed)
        rollout = moved.rollout
        step = self._leader_step(leader_sts, choice, rollout)
        if step.claims_warning is not None:
            await self._report_once(("claims", choice.key), step.claims_warning)
        if step.apply is not None:
            apply = Write("apply", STS, self.name, body=step.apply, refused=step.failed.failed)
            await self._send(apply)
            for event in step.events:
                await self._post(event)
        publish = publish_not_ready(lws.spec.network_config)
        shared = missing_shared_service(
            self.name,
            self.ns,
            self.uid,
            shared=lws.spec.network_config.subdomain_policy == SubdomainPolicy.SHARED,
            services=obs.services,
            publish=publish,
        )
        if shared is not None:
            await self._send(_create_service(shared))
        for svc, patch in publish_patches(
            obs.services, lws_name=self.name, lws_uid=self.uid, publish=publish
        ):
            await self._send(Write("patch", "Service", svc, body=patch))
        for release in moved.release:
            group = release.group
            assert group.leader is not None
            await self._delete_group(group.index, group.leader, group.workers, group.members)
        for pod in moved.stray:
            await self._send(Write("delete", "Pod", name_of(pod), uid=uid_of(pod)))
        recreations = plan_recreations(
            policy=lws.spec.leader_worker_template.restart_policy,
            lws_annotations=lws.annotations,
            lws_name=self.name,
            size=size,
            groups=groups,
            pods=obs.pods,
            lost=obs.lost,
        )
        self.memory.lost_decided |= recreations.dropped
        recreated = await self._failures(groups, size, recreations.groups)
        recreated |= {x.group.index for x in moved.release}
        await self._all_workers(groups, recreated)
        await self._release_stuck_pods()
        done = await self._status(leader_sts, groups, choice.key, size)
        if done:
            for name in rev.revisions_to_delete(obs.revisions, key=choice.key, lws_uid=self.uid):
                await self._send(Write("delete", "ControllerRevision", name))
        return self.retry

    def _leader_step(
        self, leader_sts: Any, choice: rev.RevisionChoice, rollout: RolloutPlan
    ) -> LeaderStep:
        """plan_leader, pure in the LWS's and the leader StatefulSet's spec and metadata:
        the last step is kept while they stay as they were, through pod events and status
        updates (its comparison with what was applied was 8 % of the S8000 storm's samples)."""
        key = (
            _identity(self.body),
            _identity(leader_sts or {}),
            choice.key,
            choice.changed,
            rollout,
        )
        if self.memory.leader is None or self.memory.leader[0] != key:
            step = plan_leader(
                self.lws,
                current=leader_sts,
                key=choice.key,
                rollout=rollout,
                revision_changed=choice.changed,
            )
            self.memory.leader = (key, step)
        return self.memory.leader[1]

    # ---- one group ---------------------------------------------------------------------------
    def _revision_spec(self, group: Group) -> LeaderWorkerSetSpec | None:
        key = group.leader_revision or ""
        if key not in self.specs:  # groups share a few revisions: one lookup each per pass
            revision = rev.revision_with_key(self.obs.revisions, key)
            self.specs[key] = None if revision is None else self._spec_at(dict(revision))
        return self.specs[key]

    async def _all_workers(self, groups: Sequence[Group], recreated: set[int]) -> None:
        """Plan and apply the workers of the groups due (plan/lws/workers.WorkersDue), but
        those just recreated (observed anew next time)."""
        due = self.memory.workers
        inputs = worker_inputs(self.lws, self.obs.worker_input_events)
        for index in sorted(due.now_due(inputs, len(groups)) - recreated):
            plan = self._plan_workers(groups[index])
            self._look_again_in(plan.retry)
            if plan.acts:
                await self._workers(plan)
            due.planned(index, plan)

    def _plan_workers(self, group: Group) -> WorkerPlan:
        return plan_workers(
            self.lws,
            group,
            spec=self._revision_spec(group) if group.leader is not None else None,
            services=self.obs.services,
            statefulsets=self.obs.statefulsets,
            podgroups=self.obs.podgroups,
            nodes=self.obs.nodes,
            gang_api=self.r.gang_api,
        )

    async def _workers(self, plan: WorkerPlan) -> None:
        for event in plan.events:
            await self._post(event)
        if plan.service is not None:
            await self._send(_create_service(plan.service))
        if plan.pod_group is not None and not await self._pod_group(plan.pod_group):
            return
        if plan.delete_stale is not None:
            # Foreground, as the garbage collector would (its finalizer): its pods go first,
            # since Kueue ungates at once a pod whose StatefulSet it cannot find.
            stale = plan.delete_stale
            await self._send(
                Write("delete", STS, name_of(stale), uid=uid_of(stale), propagation="Foreground")
            )
        if plan.workers is not None:
            await self._create_workers(plan)

    async def _create_workers(self, plan: WorkerPlan) -> None:
        assert plan.workers is not None
        name = name_of(plan.workers)
        create = Write(
            "create", STS, name, body=plan.workers, event=plan.created, refused=plan.failed.failed
        )
        if await self._send(create) is not None:
            return
        # It exists but the cache does not show it as this leader's: ours not seen yet, or
        # someone else's without our labels, which we must neither adopt nor delete.
        if is_foreign_workers(await self.kube.get_or_none(write_path(self.ns, create))):
            await self._post(foreign_workers(name))
            self._look_again_in(FOREIGN_RETRY)

    async def _pod_group(self, body: dict[str, Any]) -> bool:
        """Create the group's PodGroup before its workers (upstream's PodReconciler.Reconcile,
        pkg/controllers/pod_controller.go). False when it could
        not be created (reported; looked at again later)."""
        api = str(body["apiVersion"])
        try:
            await self._send(Write("create", "PodGroup", name_of(body), body=body, api_version=api))
        except ApiError as e:
            await self._post(gang.creation_failed(name_of(body), api, e.status, e.message))
            self._look_again_in(gang.CREATE_RETRY)
            return False
        return True

    # ---- moves (plan/lws/disruption.py) ----------------------------------------------------------
    async def _moves(
        self,
        leader_sts: Any,
        state: disruption.DisruptionState,
        rollout: RolloutPlan,
        revision_changed: bool,
    ) -> disruption.DisruptionPlan:
        """Advance the moves the eviction webhook recorded (plan/lws/disruption.py); the new
        state is written first."""
        step = disruption.plan_moves(
            self.lws,
            leader_sts,
            state,
            rollout,
            groups=self.obs.groups,
            pods=self.obs.pods,
            revision_changed=revision_changed,
            now=datetime.datetime.now(datetime.UTC),
        )
        if step.report is not None:
            await self._report_once(*step.report)
        self._look_again_in(step.plan.retry)
        if step.patch is not None:
            await self._send(Write("patch", STS, self.name, body=step.patch))
        for event in step.plan.events:
            log.info("%s/%s: %s", self.ns, self.name, event.note)
            await self._post(event)
        return step.plan

    # ---- failures ----------------------------------------------------------------------------
    async def _recreate(self, plan: Recreate) -> None:
        """Delete the whole group (plan/lws/restart.group_deletion), then report it."""
        await self._delete_group(
            plan.index, plan.leader, plan.workers, plan.members, settle=plan.lost
        )
        log.info(
            "%s/%s: %s (%s)", self.ns, self.name, plan.note, plan.why, extra={"group": plan.index}
        )
        self.r.metrics.group_recreated(self.ns, self.name, plan.why)
        await self._post(plan.event)

    async def _delete_group(
        self,
        index: int,
        leader: Any,
        workers: Any,
        members: tuple[Any, ...],
        settle: frozenset[str] = frozenset(),
    ) -> None:
        """Delete a group whole: the leader first, the commit point; once it is deleted,
        everything else of the group is the garbage collector's anyway, so a failed deletion
        of the rest is only logged. ``settle``: the deleted worker pods thereby decided on."""
        first, *rest = group_deletion(leader, workers, members)
        await self._send(first)
        self.memory.lost_decided |= settle
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
                    extra={"group": index},
                )
            elif isinstance(result, BaseException):
                raise result

    # ---- failure handling (issue 16): node health, budget, backoff, evidence, history --------
    def _history(self) -> History:
        """The history ConfigMap: the cache's, unless it still shows what we overwrote."""
        projected = self.obs.history
        rv = str(((projected or {}).get("metadata") or {}).get("resourceVersion"))
        current = self.memory.results.get(
            ("history", self.uid, rv),
            lambda: parse_history(projected, lws_name=self.name, lws_uid=self.uid),
        )
        if self.memory.history is not None:
            stale, written = self.memory.history
            if (current.resource_version or "") in stale:
                return written
            self.memory.history = None  # the cache caught up (or someone else wrote)
        return current

    async def _report_once(
        self, key: tuple[str, ...], event: Event, *, log_it: bool = True
    ) -> None:
        if len(self.memory.reported) >= MEMO_MAX:
            self.memory.reported.clear()  # a plain bound: at worst one report again
        if key not in self.memory.reported:
            self.memory.reported.add(key)
            if log_it:
                log.warning("%s/%s: %s", self.ns, self.name, event.note)
            await self._post(event)

    async def _failures(
        self, groups: Sequence[Group], size: int, planned: tuple[Recreate, ...]
    ) -> set[int]:
        """Decide on the broken groups (plan/lws/recovery.py), read the log tails the decision
        asks for, record the recreations in the history, then recreate. Returns the groups
        recreated."""
        template = self.lws.spec.leader_worker_template
        limits = self.r.history_limits
        history = self._history()
        s = recovery.Situation(
            groups=groups,
            size=size,
            planned=planned,
            history=history,
            nodes=self.obs.nodes,
            healthy_nodes=self.obs.healthy_nodes,
            annotations=self.lws.annotations,
            max_restarts=template.max_group_restarts,
            backoff=self.r.backoff,
            limits=limits,
            now=datetime.datetime.now(datetime.UTC),
        )
        a = recovery.ask(s)
        for about, event in a.reports:
            await self._report_once(about, event)
        self.memory.lost_decided |= a.decided.kept
        self._look_again_in(a.retry)
        evidence, logs = recovery.with_logs(a, await self._read_logs(a.reads, limits))

        def record() -> recovery.Recording:
            where = {"lws_name": self.name, "namespace": self.ns, "lws_uid": self.uid}
            return recovery.record(s, a, evidence, logs, **where)

        if recovery.decides_nothing(a.decided):
            key = ("history write", self.uid, *recovery.record_key(s, a))
            recording = self.memory.results.get(key, record)
        else:
            recording = record()
        new = recording.history
        if (report := recovery.history_report(history)) is not None:
            await self._report_once(*report)
        elif recording.write is not None:
            new = await self._write_history(history, recording.write, new)
        self.failed = new.failed_groups
        for event in (*a.decided.events, *recording.events):
            await self._post(event)
        plans = recovery.to_recreate(a)
        for plan in plans:
            await self._recreate(plan)
        return {p.index for p in plans}

    async def _read_logs(
        self, reads: Sequence[tuple[int, LogRequest]], limits: Limits
    ) -> list[tuple[str | None, str]]:
        """The log tails a recreation's evidence asks for, read together."""
        started = time.monotonic()
        results = await asyncio.gather(*(self._log_tail(r, limits) for _, r in reads))
        if (took := time.monotonic() - started) > 0.5:
            log.info(
                "%s/%s: reading %d log tail(s) before a recreation took %.1fs",
                self.ns,
                self.name,
                len(reads),
                took,
            )
        return list(results)

    async def _log_tail(self, req: LogRequest, limits: Limits) -> tuple[str | None, str]:
        """The container's log tail through the API (``pods/<name>/log``), or why not."""
        path = resource_path("v1", "pods", namespace=self.ns, name=req.pod, subresource="log")
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

    async def _write_history(self, old: History, write: HistoryWrite, new: History) -> History:
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
        return new

    async def _release_stuck_pods(self) -> None:
        stuck = stuck_pods(
            self.obs.terminating,
            ours=lambda pod: made_by_groups(
                pod, lws_name=self.name, lws_uid=self.uid, statefulsets=self.obs.statefulsets
            ),
            nodes=self.obs.nodes,
            now=datetime.datetime.now(datetime.UTC),
        )
        for pod in stuck.release:
            release = Write("delete", "Pod", name_of(pod), uid=uid_of(pod), grace_seconds=0)
            await self._send(replace(release, event=stuck.event(pod)))
        self._look_again_in(None if stuck.wait is None else stuck.wait + 1)

    # ---- status ------------------------------------------------------------------------------
    async def _status(self, leader_sts: Any, groups: Sequence[Group], key: str, size: int) -> bool:
        spec = self.lws.spec
        observed = self.body.get("status") or {}
        result = compute_status(
            groups=groups,
            key=key,
            replicas=spec.replicas,
            partition=spec.rollout_strategy.rolling_update_configuration.partition,
            size=size,
            sts_status_replicas=int(((leader_sts or {}).get("status") or {}).get("replicas") or 0),
            generation=int(self.lws.metadata.get("generation") or 0),
            lws_name=self.name,
            old_conditions=list(observed.get("conditions") or []),
            now=format_time(datetime.datetime.now(datetime.UTC)),
            failed=self.failed,
            max_restarts=spec.leader_worker_template.max_group_restarts,
        )
        now = time.monotonic()
        write = plan_status_write(
            observed=observed,
            resource_version=str(self.lws.metadata.get("resourceVersion") or ""),
            result=result,
            pacing=self.memory.pacing,
            now=now,
        )
        self.memory.pacing = write.pacing
        self._look_again_in(write.wait)
        if write.patch is not None:
            # Refused (409) when computed from a stale LWS: the queue retries with fresh state.
            after = await self._send(Write("status", c.KIND, self.name, body=write.patch)) or {}
            rv = write.patch["metadata"]["resourceVersion"]
            moved = str((after.get("metadata") or {}).get("resourceVersion")) != rv
            self.memory.pacing = write.pacing.written(now, over=rv if moved else None)
            for event in result.events:
                await self._post(event)
        self.r.metrics.groups_observed(
            self.ns, self.name, groups, key, size, spec.replicas, result.update_done
        )
        return result.update_done
