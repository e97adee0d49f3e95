"""One reconcile of a LeaderWorkerSet, decided: every step it takes, in order, from what is
observed (plan/lws/observed.py), what is remembered of the LWS between passes (``Memory``) and
the time. The reconciler (controller/lws/reconcile.py) takes the steps: it sends the writes,
posts the events, and hands back the two answers later passes need (the history's and the
status's resourceVersions, through the steps that carry them).

Order: eviction coverage → revision → moves (evictions) → leader StatefulSet → shared Service
→ groups released by moves → group recreations → each group's workers → stuck pods → status →
revision history. Broken groups are decided in two phases (plan/lws/recovery.py): :func:`ask`
first, then the reconciler reads the log tails it names, then :func:`plan_pass`.

What the pass decides to remember is a step too (``Decided``, ``Status``), taken where the
pass takes it: a pass cut short remembers only what it got to. The plan itself writes into
``Memory`` only what any plan of the same observation would: the memoised pure results, the
groups made due by a change of what their worker plans read, and the history's last write
dropped once the cache shows it.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from lws_operator.api.models import LeaderWorkerSet, LeaderWorkerSetSpec, SubdomainPolicy
from lws_operator.plan.events import Event, ReportedOnce
from lws_operator.plan.keys import MemoKey, RevisionKey
from lws_operator.plan.lws import disruption, gang, recovery
from lws_operator.plan.lws import revision as rev
from lws_operator.plan.lws.backoff import Backoff
from lws_operator.plan.lws.groups import Group, made_by_groups
from lws_operator.plan.lws.history import History, HistoryWrite, Limits, parse_history
from lws_operator.plan.lws.leader import LeaderStep, foreign_leader, leader_inputs, plan_leader
from lws_operator.plan.lws.observed import Observed
from lws_operator.plan.lws.restart import (
    FAILED_GROUP_GRACE,
    Recreate,
    group_deletion,
    plan_recreations,
    stuck_pods,
)
from lws_operator.plan.lws.rollout import plan_rollout, rollout_input
from lws_operator.plan.lws.services import (
    missing_shared_service,
    publish_not_ready,
    publish_patches,
    service_failed,
)
from lws_operator.plan.lws.status import StatusPacing, compute_status, plan_status_write
from lws_operator.plan.lws.workers import (
    NOTHING,
    WorkerPlan,
    WorkersDue,
    plan_workers,
    worker_inputs,
)
from lws_operator.plan.meta import (
    generation_of,
    is_deleting,
    name_of,
    resource_version_of,
    uid_of,
)
from lws_operator.plan.timestamps import format_time
from lws_operator.plan.writes import Write

STS = "StatefulSet"
# Memoised pure results kept per LWS at most this many: a few revisions and the latest
# history ConfigMap (a plain bound; entries are cheap to redo).
RESULTS_MAX = 64
T = TypeVar("T")


class Memo:
    """A bounded memo of pure results: re-validating stored revisions on every pod event
    would dominate a pass."""

    def __init__(self) -> None:
        self._values: dict[MemoKey, Any] = {}

    def get(self, key: MemoKey, compute: Callable[[], T]) -> T:
        if key in self._values:
            value: T = self._values[key]
            return value
        if len(self._values) >= RESULTS_MAX:
            self._values.clear()
        value = self._values[key] = compute()
        return value


@dataclass
class Memory:
    """What is remembered of one LWS between passes, forgotten with it."""

    reported_invalid: set[int] = field(default_factory=set)
    """Generations already reported invalid: one Warning each."""
    pacing: StatusPacing = field(default_factory=StatusPacing)
    """When its status was last written, and the counters held back since (plan/lws/status.py)."""
    model: tuple[str, LeaderWorkerSet] | None = None
    """The validated LWS, by the resourceVersion it was read at."""
    history: tuple[set[str], History] | None = None
    """The history ConfigMap as last written, and the resourceVersions it supersedes (the
    cache may still show one of them for a moment after the write)."""
    reported: ReportedOnce = field(default_factory=ReportedOnce)
    """Warnings already reported, by what they are about (one each): node problems, invalid
    requests and budgets, claims a revision cannot apply, a history ConfigMap not ours."""
    leader: tuple[tuple[Any, ...], LeaderStep] | None = None
    """The last leader StatefulSet step, by what it was planned from (leader.leader_inputs)."""
    results: Memo = field(default_factory=Memo)
    """Pure results derived from its revisions and history (validated revision specs), kept
    while it exists: in one memo for every LWS they outlived their LWS."""
    workers: WorkersDue = field(default_factory=WorkersDue)
    """The groups whose workers to plan again (plan/lws/workers.py)."""
    lost_decided: set[str] = field(default_factory=set)
    """The deleted worker pods (uids) already decided on: the cache keeps their records while
    their worker StatefulSet exists; kept only while the cache still shows them."""


@dataclass(frozen=True)
class Settings:
    """What the operator is configured with, for every LWS."""

    gang_api: gang.GangApi | None = None
    """Gang scheduling: a PodGroup per group, of this provider and API (plan/lws/gang.py)."""
    gang_unavailable: Event | None = None
    """A gang provider configured whose PodGroups this cluster cannot serve: this Warning goes
    once on each LWS, run without gangs."""
    backoff: Backoff = field(default_factory=Backoff)
    history_limits: Limits = field(default_factory=Limits)
    failed_group_grace: int | None = FAILED_GROUP_GRACE
    """Seconds a failed group's pods get to stop (None: their own; plan/lws/recovery.py)."""


# ---- the steps -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Send:
    """Send the write; a refusal ends the pass (the queue retries with fresh state)."""

    write: Write


@dataclass(frozen=True)
class Post:
    event: Event
    log: bool = False
    """Also in the operator's log (a group being moved)."""


@dataclass(frozen=True)
class Report:
    """A Warning posted (and logged) once per LWS for what it is ``about``."""

    about: tuple[str, ...]
    event: Event
    log: bool = True


@dataclass(frozen=True)
class Cover:
    """Have the eviction webhook cover this LWS before its objects exist."""


@dataclass(frozen=True)
class DeleteGroup:
    """Delete a group whole (plan/lws/restart.group_deletion): the first write is the commit
    point (a refusal ends the pass, nothing else touched); then ``settle`` is decided, and the
    rest go together, a refusal of those only logged (the garbage collector removes them with
    the old leader). ``recreated``: reported as recreated once done."""

    index: int
    writes: tuple[Write, ...]
    settle: frozenset[str] = frozenset()
    recreated: Recreate | None = None


@dataclass(frozen=True)
class Workers:
    """One group's workers (plan/lws/workers.py), in the order its docstring gives."""

    plan: WorkerPlan


@dataclass(frozen=True)
class WriteHistory:
    """Write the history ConfigMap; its answer's resourceVersion is remembered with ``new``."""

    old: History
    write: HistoryWrite
    new: History


@dataclass(frozen=True)
class Status:
    """Remember the status's pacing; then, with a ``patch``, write the status, have the
    pacing remember the write (``StatusPacing.written``) and post the events."""

    pacing: StatusPacing
    patch: dict[str, Any] | None = None
    at: float = 0.0
    events: tuple[Event, ...] = ()


@dataclass(frozen=True)
class Decided:
    """Remember what the pass has decided: deleted worker pods (``Memory.lost_decided``) and
    groups whose workers need nothing until they change (``WorkersDue.planned``)."""

    lost: frozenset[str] = frozenset()
    settled: tuple[int, ...] = ()


@dataclass(frozen=True)
class GroupsObserved:
    """The metrics of the groups as this pass counted them."""

    groups: Sequence[Group]
    key: RevisionKey
    size: int
    replicas: int
    update_done: bool


Step = (
    Send
    | Post
    | Report
    | Cover
    | DeleteGroup
    | Workers
    | WriteHistory
    | Status
    | Decided
    | GroupsObserved
)


@dataclass(frozen=True)
class PassPlan:
    steps: tuple[Step, ...]
    retry: float | None
    """Seconds after which to look again (for what no watch reports), or None."""


@dataclass(frozen=True)
class Broken:
    """Phase one of a pass: the broken groups decided before any log is read."""

    dropped: frozenset[str]
    """Deleted worker pods that need no decision (plan/lws/restart.py)."""
    situation: recovery.Situation
    ask: recovery.Ask


# ---- memoised pure results -------------------------------------------------------------------


def _spec_version(lws: LeaderWorkerSet) -> tuple[str, int]:
    """The LWS's spec is the same while its uid and generation are."""
    return str(lws.metadata.get("uid")), int(lws.metadata.get("generation") or 0)


def _revision_version(revision: Mapping[str, Any]) -> tuple[str, str]:
    return uid_of(revision), resource_version_of(revision)


def _matches(memory: Memory, lws: LeaderWorkerSet, revision: Mapping[str, Any]) -> bool:
    key = MemoKey(("matches", *_revision_version(revision), *_spec_version(lws)))
    return memory.results.get(key, lambda: rev.matches(dict(revision), lws.spec))


def _spec_at(
    memory: Memory, lws: LeaderWorkerSet, revision: Mapping[str, Any]
) -> LeaderWorkerSetSpec:
    key = MemoKey(("spec", *_revision_version(revision), *_spec_version(lws)))
    return memory.results.get(key, lambda: rev.spec_at_revision(lws.spec, dict(revision)))


def _history(memory: Memory, lws: LeaderWorkerSet, projected: Mapping[str, Any] | None) -> History:
    """The history ConfigMap: the cache's, unless it still shows what the last write
    replaced (then that write's)."""
    uid = str(lws.metadata.get("uid", ""))
    rv = resource_version_of(projected)
    current = memory.results.get(
        MemoKey(("history", uid, rv)),
        lambda: parse_history(projected, lws_name=lws.name, lws_uid=uid),
    )
    if memory.history is not None:
        stale, written = memory.history
        if (current.resource_version or "") in stale:
            return written
        memory.history = None  # the cache caught up (or someone else wrote)
    return current


# ---- phase one: the broken groups ------------------------------------------------------------


def ask(
    lws: LeaderWorkerSet,
    obs: Observed,
    memory: Memory,
    settings: Settings,
    now: datetime.datetime,
) -> Broken:
    """Which groups are broken and what is decided for them; the log tails to read (none
    when the pass stops before its broken groups)."""
    template = lws.spec.leader_worker_template
    recreations = plan_recreations(
        policy=template.restart_policy,
        lws_annotations=lws.annotations,
        lws_name=lws.name,
        size=template.size,
        groups=obs.groups,
        pods=obs.pods,
        lost=obs.lost,
    )
    situation = recovery.Situation(
        groups=obs.groups,
        size=template.size,
        planned=() if _stops(lws, obs) else recreations.groups,
        history=_history(memory, lws, obs.history),
        nodes=obs.nodes,
        healthy_nodes=obs.healthy_nodes,
        annotations=lws.annotations,
        max_restarts=template.max_group_restarts,
        backoff=settings.backoff,
        limits=settings.history_limits,
        now=now,
        failed_group_grace=settings.failed_group_grace,
    )
    return Broken(recreations.dropped, situation, recovery.ask(situation))


# ---- phase two: the pass ---------------------------------------------------------------------


def _stops(lws: LeaderWorkerSet, obs: Observed) -> bool:
    """The pass stops at once: a leader StatefulSet not ours, or one being deleted."""
    leader_sts = obs.statefulsets.get(lws.name)
    return foreign_leader(lws, leader_sts) is not None or (
        leader_sts is not None and is_deleting(leader_sts)
    )


class _Planner:
    def __init__(
        self,
        lws: LeaderWorkerSet,
        obs: Observed,
        memory: Memory,
        settings: Settings,
        now: datetime.datetime,
        clock: float,
    ) -> None:
        self.lws, self.obs, self.memory, self.settings = lws, obs, memory, settings
        self.now, self.clock = now, clock
        self.name, self.ns = lws.name, lws.namespace
        self.uid = str(lws.metadata.get("uid", ""))
        self.steps: list[Step] = []
        self.retry: float | None = None

    def look_again_in(self, seconds: float | None) -> None:
        if seconds is not None:
            self.retry = seconds if self.retry is None else min(self.retry, seconds)

    def add(self, *steps: Step) -> None:
        self.steps.extend(steps)

    def plan(self, broken: Broken, logs: list[tuple[str | None, str]]) -> PassPlan:
        lws, obs = self.lws, self.obs
        leader_sts = obs.statefulsets.get(self.name)
        if (blocked := foreign_leader(lws, leader_sts)) is not None:
            return PassPlan((Post(blocked),), None)  # never touched; its removal wakes us
        if leader_sts is not None and is_deleting(leader_sts):
            return PassPlan((), None)  # its deletion wakes us
        if self.settings.gang_unavailable is not None:  # logged once at start-up
            self.add(Report(("gang",), self.settings.gang_unavailable, log=False))
        self.add(Cover())
        choice = rev.choose_revision(
            lws,
            leader_sts=leader_sts,
            revisions=obs.revisions,
            matches=lambda r: _matches(self.memory, lws, r),
        )
        if choice.create is not None:
            create = choice.create
            self.add(
                Send(Write("create", "ControllerRevision", name_of(create), body=create)),
                Post(rev.creating_revision(choice.note)),
            )
        state = disruption.read_state(leader_sts)
        rollout = plan_rollout(
            disruption.rollout_view(
                rollout_input(
                    spec=lws.spec,
                    leader_sts=leader_sts,
                    groups=obs.groups,
                    key=choice.key,
                    revision_changed=choice.changed,
                ),
                state,
            )
        )
        moves = disruption.plan_moves(
            lws,
            leader_sts,
            state,
            rollout,
            groups=obs.groups,
            pods=obs.pods,
            revision_changed=choice.changed,
            now=self.now,
        )
        if moves.report is not None:
            self.add(Report(*moves.report))
        self.look_again_in(moves.plan.retry)
        if moves.patch is not None:
            self.add(Send(Write("patch", STS, self.name, body=moves.patch)))
        self.add(*(Post(e, log=True) for e in moves.plan.events))
        self._leader(leader_sts, choice, moves.plan.rollout)
        self._services()
        for release in moves.plan.release:
            group = release.group
            assert group.leader is not None
            deletion = group_deletion(group.leader, group.workers, group.members)
            self.add(DeleteGroup(group.index, deletion))
        for pod in moves.plan.stray:
            self.add(Send(Write("delete", "Pod", name_of(pod), uid=uid_of(pod))))
        if broken.dropped:
            self.add(Decided(lost=broken.dropped))
        failed, recreated = self._failures(broken, logs)
        recreated |= {x.group.index for x in moves.plan.release}
        self._workers(recreated)
        self._stuck_pods()
        if self._status(leader_sts, choice.key, failed):
            for name in rev.revisions_to_delete(obs.revisions, key=choice.key, lws_uid=self.uid):
                self.add(Send(Write("delete", "ControllerRevision", name)))
        return PassPlan(tuple(self.steps), self.retry)

    def _leader(self, leader_sts: Any, choice: rev.RevisionChoice, rollout: Any) -> None:
        """plan_leader, kept while what it is planned from stays (leader.leader_inputs):
        through pod events and status updates (its comparison with what was applied was 8 %
        of the S8000 storm's samples)."""
        key = leader_inputs(self.obs.lws or {}, leader_sts, choice, rollout)
        if self.memory.leader is None or self.memory.leader[0] != key:
            step = plan_leader(
                self.lws,
                current=leader_sts,
                key=choice.key,
                rollout=rollout,
                revision_changed=choice.changed,
            )
            self.memory.leader = (key, step)
        step = self.memory.leader[1]
        if step.claims_warning is not None:
            self.add(Report(("claims", choice.key), step.claims_warning))
        if step.apply is not None:
            apply = Write("apply", STS, self.name, body=step.apply, refused=step.failed.failed)
            self.add(Send(apply), *(Post(e) for e in step.events))

    def _services(self) -> None:
        lws, obs = self.lws, self.obs
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
            self.add(Send(create_service(shared)))
        for svc, patch in publish_patches(
            obs.services, lws_name=self.name, lws_uid=self.uid, publish=publish
        ):
            self.add(Send(Write("patch", "Service", svc, body=patch)))

    def _failures(
        self, broken: Broken, logs: list[tuple[str | None, str]]
    ) -> tuple[tuple[int, ...], set[int]]:
        """Report, record the recreations in the history, then recreate (plan/lws/recovery.py).
        Returns the Failed groups and those recreated."""
        s, a = broken.situation, broken.ask
        self.add(*(Report(about, event) for about, event in a.reports))
        if a.decided.kept:
            self.add(Decided(lost=a.decided.kept))
        self.look_again_in(a.retry)
        evidence, tails = recovery.with_logs(a, logs)

        def record() -> recovery.Recording:
            where = {"lws_name": self.name, "namespace": self.ns, "lws_uid": self.uid}
            return recovery.record(s, a, evidence, tails, **where)

        if recovery.decides_nothing(a.decided):
            key = MemoKey(("history write", self.uid, *recovery.record_key(s, a)))
            recording = self.memory.results.get(key, record)
        else:
            recording = record()
        if (report := recovery.history_report(s.history)) is not None:
            self.add(Report(*report))
        elif recording.write is not None:
            self.add(WriteHistory(s.history, recording.write, recording.history))
        self.add(*(Post(e) for e in (*a.decided.events, *recording.events)))
        plans = recovery.to_recreate(a)
        for plan in plans:
            deletion = recovery.deletion(a, plan)
            self.add(DeleteGroup(plan.index, deletion, settle=plan.lost, recreated=plan))
        return recording.history.failed_groups, {p.index for p in plans}

    def _workers(self, recreated: set[int]) -> None:
        """The workers of the groups due (plan/lws/workers.WorkersDue), but those just
        recreated (observed anew next time)."""
        lws, obs, due = self.lws, self.obs, self.memory.workers
        specs: dict[str, LeaderWorkerSetSpec | None] = {}  # groups share a few revisions

        def spec_of(group: Group) -> LeaderWorkerSetSpec | None:
            key = group.leader_revision or ""
            if key not in specs:
                revision = rev.revision_with_key(obs.revisions, key)
                specs[key] = None if revision is None else _spec_at(self.memory, lws, revision)
            return specs[key]

        inputs = worker_inputs(lws, obs.worker_input_events)
        settled = []
        for index in sorted(due.now_due(inputs, len(obs.groups)) - recreated):
            group = obs.groups[index]
            plan = plan_workers(
                lws,
                group,
                spec=spec_of(group) if group.leader is not None else None,
                services=obs.services,
                statefulsets=obs.statefulsets,
                podgroups=obs.podgroups,
                nodes=obs.nodes,
                gang_api=self.settings.gang_api,
            )
            self.look_again_in(plan.retry)
            if plan.acts:
                self.add(Workers(plan))
            elif plan is NOTHING:
                settled.append(index)
        if settled:
            self.add(Decided(settled=tuple(settled)))

    def _stuck_pods(self) -> None:
        stuck = stuck_pods(
            self.obs.terminating,
            ours=lambda pod: made_by_groups(
                pod, lws_name=self.name, lws_uid=self.uid, statefulsets=self.obs.statefulsets
            ),
            nodes=self.obs.nodes,
            now=self.now,
        )
        for pod in stuck.release:
            release = Write("delete", "Pod", name_of(pod), uid=uid_of(pod), grace_seconds=0)
            self.add(Send(replace(release, event=stuck.event(pod))))
        self.look_again_in(None if stuck.wait is None else stuck.wait + 1)

    def _status(self, leader_sts: Any, key: RevisionKey, failed: tuple[int, ...]) -> bool:
        """The status step; True once the update is done (old revisions may go)."""
        spec, body = self.lws.spec, self.obs.lws or {}
        observed = body.get("status") or {}
        size = spec.leader_worker_template.size
        result = compute_status(
            groups=self.obs.groups,
            key=key,
            replicas=spec.replicas,
            partition=spec.rollout_strategy.rolling_update_configuration.partition,
            size=size,
            sts_status_replicas=int(((leader_sts or {}).get("status") or {}).get("replicas") or 0),
            generation=generation_of(body),
            lws_name=self.name,
            old_conditions=list(observed.get("conditions") or []),
            now=format_time(self.now),
            failed=failed,
            max_restarts=spec.leader_worker_template.max_group_restarts,
        )
        write = plan_status_write(
            observed=observed,
            resource_version=resource_version_of(body),
            result=result,
            pacing=self.memory.pacing,
            now=self.clock,
        )
        self.look_again_in(write.wait)
        events = result.events if write.patch is not None else ()
        self.add(Status(write.pacing, write.patch, self.clock, events))
        self.add(GroupsObserved(self.obs.groups, key, size, spec.replicas, result.update_done))
        return result.update_done


def create_service(body: dict[str, Any]) -> Write:
    return Write("create", "Service", name_of(body), body=body, refused=service_failed)


def plan_pass(
    lws: LeaderWorkerSet,
    obs: Observed,
    memory: Memory,
    settings: Settings,
    broken: Broken,
    logs: list[tuple[str | None, str]],
    *,
    now: datetime.datetime,
    clock: float,
) -> PassPlan:
    """The pass, from :func:`ask`'s decision and the outcome of each log read it named (in
    its order). ``now``: the time; ``clock``: monotonic seconds (the status's pacing)."""
    return _Planner(lws, obs, memory, settings, now, clock).plan(broken, logs)
