"""Between "this group is broken" (plan/lws/restart.py) and its deletion: the restart budget
(upstream KEP-820), the backoff of a crash loop, recreations a user asks for, and the
history that records each recreation before it happens (issue 16).

For each group ``plan_recreations`` wants recreated, in this order:

1. its last record is of this very leader: the recreation was recorded but the deletion did
   not happen (the operator stopped, or the delete failed): delete again, count nothing;
2. its budget ran out earlier for this leader: the group is Failed, its pods are kept;
3. ``maxGroupRestarts`` is set and the group has been recreated that many times: it becomes
   Failed now (condition, Warning event), not recreated, its pods kept;
4. a crash loop whose backoff has not elapsed: wait (one Warning event, the wait recorded);
5. otherwise: recorded, then recreated.

A user's request (annotation ``lws-operator.x-k8s.io/recreate-groups``) recreates the named
groups at once, whatever their state, and starts their budget and backoff afresh. A Failed
group whose leader someone else replaced (deleted by hand, a new template rolled) is no
longer Failed and its budget starts again, as in upstream's draft (lws#877).
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from lws_operator.api import constants as c
from lws_operator.plan.events import DELETE, Event, normal, warning
from lws_operator.plan.lws import backoff as bo
from lws_operator.plan.lws.groups import Group, group_at
from lws_operator.plan.lws.history import (
    ContainerFailure,
    GroupHistory,
    History,
    Recreation,
    log_key,
)
from lws_operator.plan.lws.restart import Recreate
from lws_operator.plan.meta import name_of, uid_of
from lws_operator.plan.timestamps import format_millis, parse_time

# Event reasons (ours; upstream has no such events).
GROUP_FAILURE = "GroupFailure"
GROUP_BACKOFF = "GroupBackoff"
GROUP_RECOVERED = "GroupRecovered"
REQUEST_INVALID = "InvalidRecreateRequest"
GRACE_INVALID = "InvalidFailedGroupGrace"

_REQUEST = re.compile(r"^\s*(\d+(?:\s*,\s*\d+)*)\s*(?:@(.*))?$")


@dataclass(frozen=True)
class Request:
    value: str
    groups: tuple[int, ...]


def parse_request(
    annotations: Mapping[str, str], handled: str | None
) -> tuple[Request | None, str | None]:
    """The pending recreation request, or an error naming the annotation; (None, None) when
    there is none or it was carried out already (its value is recorded in the history)."""
    value = annotations.get(c.RECREATE_GROUPS_ANNOTATION)
    if value is None or value == handled:
        return None, None
    m = _REQUEST.match(value)
    if m is None:
        return None, (
            f"metadata.annotations[{c.RECREATE_GROUPS_ANNOTATION}]: Invalid value: {value!r}: "
            'must be group indices, optionally with a token: "3", "1,4" or "3@<token>"'
        )
    groups = tuple(sorted({int(x) for x in m.group(1).split(",")}))
    return Request(value, groups), None


@dataclass(frozen=True)
class Waiting:
    index: int
    leader_uid: str
    seconds: float
    """Left to wait."""
    backoff: float
    """The whole wait, from the last recreation."""
    until: str
    announce: bool
    """Not announced for this leader yet: post the event and record the wait."""

    @property
    def event(self) -> Event:
        return warning(
            GROUP_BACKOFF,
            DELETE,
            f"group {self.index}: crash loop, next recreation in {math.ceil(self.seconds)} s "
            f"(backoff {self.backoff:g} s after the last one)",
        )


@dataclass(frozen=True)
class Exhausted:
    plan: Recreate
    restarts: int
    limit: int

    @property
    def event(self) -> Event:
        return warning(
            c.REASON_MAX_GROUP_RESTARTS_EXCEEDED,
            DELETE,
            f"group {self.plan.index} failed again ({self.plan.culprit} {self.plan.why}) after "
            f"{self.restarts} recreations, maxGroupRestarts {self.limit}: not recreated, its "
            "pods are kept for inspection",
        )


@dataclass(frozen=True)
class FailureDecisions:
    """What :func:`decide_failures` decided for the groups a failure or a request would
    recreate: which to record and delete, which to wait for, which are Failed."""

    recreate: tuple[tuple[Recreate, str, float], ...] = ()
    """(plan, trigger, seconds waited) to record, then delete."""
    redo: tuple[Recreate, ...] = ()
    """Recorded already: delete again, count nothing."""
    exhausted: tuple[Exhausted, ...] = ()
    waiting: tuple[Waiting, ...] = ()
    kept: frozenset[str] = frozenset()
    """Lost-pod uids of Failed groups: decided on, nothing to do."""
    recovered: tuple[int, ...] = ()
    ready: tuple[int, ...] = ()
    """Groups seen Ready after their last recreation: note since when (backoff reset)."""
    retry: float | None = None
    events: tuple[Event, ...] = ()


def requested(request: Request | None, groups: Sequence[Group]) -> tuple[Recreate, ...]:
    """The groups a request names that exist now, as recreations (nothing failed)."""
    if request is None:
        return ()
    by_index = {g.index: g for g in groups}
    out = []
    for i in request.groups:
        group = by_index.get(i)
        if group is None or group.leader is None or not group.leader_live:
            continue
        out.append(
            Recreate(
                index=i,
                leader=group.leader,
                workers=group.workers,
                members=group.members,
                culprit=name_of(group.leader),
                why="requested",
            )
        )
    return tuple(out)


def decide_failures(
    *,
    planned: Sequence[Recreate],
    requests: Sequence[Recreate],
    groups: Sequence[Group],
    history: History,
    max_restarts: int | None,
    size: int,
    backoff: bo.Backoff,
    now: datetime.datetime,
) -> FailureDecisions:
    """Decide, for every group a failure or a request would recreate (module docstring)."""
    recreate: list[tuple[Recreate, str, float]] = [(r, "requested", 0.0) for r in requests]
    redo, exhausted, waiting, recovered, ready, events = [], [], [], [], [], []
    kept: set[str] = set()
    waits: list[float] = []
    asked = {r.index for r in requests}
    planned_by = {p.index: p for p in planned}
    effective: dict[int, GroupHistory] = {}
    # Only groups with something recorded or to decide: not every group on every pass.
    for index in sorted({*history.groups, *planned_by}):
        if (group := group_at(groups, index)) is None:
            continue
        h = history.group(group.index)
        leader = group.leader
        if leader is None or not group.leader_live or group.index in asked:
            continue
        leader_uid = uid_of(leader)
        if h.failed_leader and leader_uid != h.failed_leader:
            recovered.append(group.index)
            events.append(
                normal(
                    GROUP_RECOVERED,
                    "Update",
                    f"group {group.index}: its kept leader was replaced; it is no longer "
                    "Failed and its restart budget starts again",
                )
            )
            h = replace(h, failed_leader=None, failed_at=None, restarts=0, streak=0)
        effective[group.index] = h
        last = h.last
        if last is not None and last.leader_uid == leader_uid:
            # Recorded, not deleted (stopped in between, or the delete failed): finish it.
            redo.append(
                planned_by.get(group.index)
                or Recreate(
                    index=group.index,
                    leader=leader,
                    workers=group.workers,
                    members=group.members,
                    culprit=last.culprit,
                    why=last.trigger,
                )
            )
            continue
        if h.streak and h.ready_since is None and last is not None and group.ready(size):
            ready.append(group.index)
    redone = {r.index for r in redo}
    for plan in planned:
        if plan.index in asked or plan.index in redone or plan.index not in effective:
            continue
        h = effective[plan.index]
        leader_uid = uid_of(plan.leader)
        if h.failed_leader == leader_uid:
            kept |= plan.lost
        elif max_restarts is not None and h.restarts >= max_restarts:
            exhausted.append(Exhausted(plan, h.restarts, max_restarts))
            kept |= plan.lost
        else:
            ready_since = parse_time(h.ready_since)
            seconds = bo.wait(
                streak=h.streak, last=h.last_at, ready_since=ready_since, now=now, backoff=backoff
            )
            if seconds > 0:
                until = format_millis(now + datetime.timedelta(seconds=seconds))
                announce = h.backoff_leader != leader_uid
                step = bo.delay(bo.current_streak(h.streak, ready_since, now, backoff), backoff)
                waiting.append(Waiting(plan.index, leader_uid, seconds, step, until, announce))
                waits.append(seconds)
            else:
                waited = 0.0
                if h.backoff_leader == leader_uid and h.last_at is not None:
                    waited = round((now - h.last_at).total_seconds(), 1)
                recreate.append((plan, plan.why, waited))
    return FailureDecisions(
        recreate=tuple(recreate),
        redo=tuple(redo),
        exhausted=tuple(exhausted),
        waiting=tuple(waiting),
        kept=frozenset(kept),
        recovered=tuple(recovered),
        ready=tuple(ready),
        retry=min(waits) if waits else None,
        events=tuple(events),
    )


@dataclass(frozen=True)
class Evidence:
    failures: tuple[ContainerFailure, ...] = ()
    nodes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Recorded:
    groups: dict[int, GroupHistory]
    logs: dict[str, str] = field(default_factory=dict)
    events: tuple[Event, ...] = ()


def record(
    history: History,
    decided: FailureDecisions,
    *,
    evidence: Mapping[int, Evidence],
    logs: Mapping[tuple[int, int], str],
    backoff: bo.Backoff,
    group_count: int,
    now: datetime.datetime,
) -> Recorded:
    """The history after ``decided``: a record per recreation (``evidence`` by group index,
    ``logs`` by (group index, failure position)), Failed groups, waits announced, Ready
    times and recoveries; histories of groups that no longer exist are dropped."""
    at = format_millis(now)
    groups = {i: g for i, g in history.groups.items() if i < group_count}
    new_logs: dict[str, str] = {}
    events: list[Event] = []
    for i in decided.recovered:
        groups[i] = replace(groups[i], failed_leader=None, failed_at=None, restarts=0, streak=0)
    for i in decided.ready:
        groups[i] = replace(groups[i], ready_since=at)
    for wait in decided.waiting:
        if wait.announce:
            g = groups.get(wait.index, GroupHistory())
            groups[wait.index] = replace(
                g,
                backoff_leader=wait.leader_uid,
                backoff_until=wait.until,
            )
            events.append(wait.event)
    for ex in decided.exhausted:
        g = groups.get(ex.plan.index, GroupHistory())
        groups[ex.plan.index] = replace(
            g, failed_leader=uid_of(ex.plan.leader), failed_at=at, backoff_leader=None
        )
        events.append(ex.event)
    for plan, trigger, waited in decided.recreate:
        g = groups.get(plan.index, GroupHistory())
        counted = trigger != "requested"
        if counted:
            streak = bo.current_streak(g.streak, parse_time(g.ready_since), now, backoff) + 1
            restarts = g.restarts + 1
        else:
            streak, restarts = 0, 0
        number = g.total + 1
        found = evidence.get(plan.index, Evidence())
        failures = []
        for k, failure in enumerate(found.failures):
            text = logs.get((plan.index, k))
            if text is not None:
                name = log_key(plan.index, number, k)
                new_logs[name] = text
                failure = replace(failure, log=name)
            failures.append(failure)
        entry = Recreation(
            number=number,
            at=at,
            trigger=trigger,
            culprit=plan.culprit,
            leader=name_of(plan.leader),
            leader_uid=uid_of(plan.leader),
            counted=counted,
            waited=waited,
            failures=tuple(failures),
            nodes=found.nodes,
        )
        groups[plan.index] = replace(
            g,
            restarts=restarts,
            streak=streak,
            total=number,
            ready_since=None,
            failed_leader=None,
            failed_at=None,
            backoff_leader=None,
            backoff_until=None,
            recreations=(*g.recreations, entry),
        )
        events.append(failure_event(plan.index, entry))
    return Recorded(groups, new_logs, tuple(events))


def failure_event(index: int, entry: Recreation) -> Event:
    """The Warning that goes with a recreation: what failed, where, and where the rest is."""
    if entry.trigger == "requested":
        return normal(GROUP_FAILURE, DELETE, f"group {index}: recreation requested")
    first = entry.failures[0].summary() if entry.failures else f"pod {entry.culprit} failed"
    more = len(entry.failures) - 1
    note = f"group {index}: {first}"
    if more > 0:
        note += f" (+{more} more)"
    if entry.nodes:
        note += f"; {entry.nodes[0]}"
    return warning(GROUP_FAILURE, DELETE, note[:900])
