"""The LeaderWorkerSet status: group counts and the Available / Progressing / UpdateInProgress
conditions.

As upstream's updateStatus and updateConditions (pkg/controllers/leaderworkerset_controller.go)
compute them, for the fields of api/leaderworkerset/v1/leaderworkerset_types.go
(LeaderWorkerSetStatus). Pure: the caller observes the groups and passes the clock in. Deliberate
departures from upstream are marked "Fix:" and listed in docs/compatibility.md.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from lws_operator.api import constants as c
from lws_operator.plan.diff import contains
from lws_operator.plan.events import GROUPS_PROGRESSING, GROUPS_UPDATING, UPDATE, Event, normal
from lws_operator.plan.keys import RevisionKey
from lws_operator.plan.lws.groups import Counts, Group, group_at, tally

REASON_ALL_GROUPS_READY = "AllGroupsReady"

# makeCondition: the only conditions ever set True, with fixed reason and message.
_CONTENT: Mapping[str, tuple[str, str]] = {
    c.CONDITION_AVAILABLE: (REASON_ALL_GROUPS_READY, "All replicas are ready"),
    c.CONDITION_UPDATE_IN_PROGRESS: (GROUPS_UPDATING, "Rolling Upgrade is in progress"),
    c.CONDITION_PROGRESSING: (GROUPS_PROGRESSING, "Replicas are progressing"),
}
# Setting one member True turns the other False. Progressing and UpdateInProgress are not
# exclusive, so UpdateInProgress stays True until Available.
_EXCLUSIVE = frozenset(
    {
        frozenset({c.CONDITION_AVAILABLE, c.CONDITION_PROGRESSING}),
        frozenset({c.CONDITION_AVAILABLE, c.CONDITION_UPDATE_IN_PROGRESS}),
    }
)


@dataclass(frozen=True)
class GroupCounts:
    ready: int
    """status.readyReplicas: every counted group, surge included."""
    updated: int
    """status.updatedReplicas: every counted group, surge included."""
    current: int
    """Counted groups with P <= index < R: the ones a rollout must update."""
    current_updated: int
    ready_non_burst: int
    """Ready groups with index < R."""
    updated_and_ready: int
    """Current groups both updated and ready."""
    ready_members: int = 0
    """Ready members of the counted groups (ready leaders, the worker StatefulSets'
    availableReplicas): not in the status; while it changes the groups are still moving."""


@dataclass(frozen=True)
class StatusResult:
    status: dict[str, Any]
    """The status to write, camelCase as in the API."""
    update_done: bool
    """P == 0 and all R groups updated and ready: old revisions may be truncated."""
    events: tuple[Event, ...]
    """A Normal event for each condition that became True in this pass (upstream's
    updateConditions)."""
    ready_members: int = 0
    """``GroupCounts.ready_members``: it paces counters-only writes (``plan_status_write``)."""


def hpa_pod_selector(lws_name: str) -> str:
    """Leader pods only: the HPA scales groups, one leader per group."""
    return f"{c.SET_NAME_LABEL}={lws_name},{c.WORKER_INDEX_LABEL}=0"


def count_groups(
    groups: Sequence[Group],
    *,
    key: RevisionKey,
    replicas: int,
    partition: int,
    size: int,
    failed: Collection[int] = (),
) -> GroupCounts:
    """Upstream's counting rules (updateConditions); ``key`` is the current revision's. ``failed``
    groups (restart budget exhausted, KEP-820) are never counted ready. Summed by ``tally``: kept up
    to date as groups change, then corrected for the failed groups."""

    def count(group: Group, failed: bool = False) -> Counts:
        if group.leader is None or not group.workers_present(size):
            # Kept from upstream: a group without its worker sts is not counted anywhere. Its
            # ready/updated counts would be 0 anyway, and counting it as "current" would
            # report UpdateInProgress while a new LWS is still creating its worker sts.
            return _NOT_COUNTED
        is_ready = group.ready(size) and not failed
        is_updated = group.updated(size, key)
        is_current = partition <= group.index < replicas
        return (
            is_ready,
            is_updated,
            is_current,
            is_current and is_updated,
            is_ready and group.index < replicas,
            is_current and is_ready and is_updated,
            group.ready_members,
        )

    sums = list(tally(groups, ("status", key, replicas, partition, size), count, 7))
    for index in set(failed):
        if (group := group_at(groups, index)) is not None:
            for k, (healthy, broken) in enumerate(
                zip(count(group), count(group, True), strict=True)
            ):
                sums[k] += broken - healthy
    return GroupCounts(*sums)


_NOT_COUNTED: Counts = (0,) * 7


def desired_conditions(counts: GroupCounts, replicas: int) -> tuple[str, ...]:
    """The conditions to set True, in upstream's order (updateConditions)."""
    if counts.current_updated < counts.current:
        return (c.CONDITION_UPDATE_IN_PROGRESS, c.CONDITION_PROGRESSING)
    if counts.ready_non_burst == replicas and counts.updated_and_ready == counts.current:
        return (c.CONDITION_AVAILABLE,)  # also with replicas == 0: zero of zero ready
    return (c.CONDITION_PROGRESSING,)


def _new_condition(type_: str, *, generation: int, now: str) -> dict[str, Any]:
    reason, message = _CONTENT[type_]
    return {
        "type": type_,
        "status": "True",
        "observedGeneration": generation,
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    }


def merge_conditions(
    old: Sequence[Mapping[str, Any]], desired: Sequence[str], *, generation: int, now: str
) -> tuple[list[dict[str, Any]], list[str]]:
    """Set every ``desired`` condition True (setCondition), returning the new list and the
    types that became True.

    Fix: upstream's setConditions short-circuits after the first changed condition, so
    Progressing lagged UpdateInProgress by a reconcile; here all are applied in one pass.
    Fix: a True condition that stays True keeps its lastTransitionTime when only the
    generation moved (upstream replaced it, churning the time and re-emitting the event).
    """
    conditions = [dict(cond) for cond in old]
    became_true: list[str] = []

    for type_ in desired:
        reason, message = _CONTENT[type_]
        found = False
        for i, cond in enumerate(conditions):
            other = cond.get("type")
            if not isinstance(other, str):
                continue
            if other == type_:
                found = True
                if cond.get("status") != "True":
                    conditions[i] = _new_condition(type_, generation=generation, now=now)
                    became_true.append(type_)
                elif (cond.get("reason"), cond.get("message")) != (reason, message):
                    cond.update(reason=reason, message=message)  # e.g. an older controller's
            elif frozenset({other, type_}) in _EXCLUSIVE and cond.get("status") == "True":
                # Kept from upstream: only status and time change; the False condition keeps
                # the reason and message of its True state.
                cond.update(status="False", lastTransitionTime=now)
        if not found:
            conditions.append(_new_condition(type_, generation=generation, now=now))
            became_true.append(type_)
    for cond in conditions:
        cond["observedGeneration"] = generation
    return conditions, became_true


def compute_status(
    *,
    groups: Sequence[Group],
    key: RevisionKey,
    replicas: int,
    partition: int,
    size: int,
    sts_status_replicas: int,
    generation: int,
    lws_name: str,
    old_conditions: Sequence[Mapping[str, Any]],
    now: str,
    failed: Collection[int] = (),
    max_restarts: int | None = None,
) -> StatusResult:
    """The status for one pass. ``replicas``/``partition`` are the LWS spec values, ``key``
    the current revision's; ``sts_status_replicas`` is the leader sts status.replicas (surge
    groups included). Counters that are 0 are left out, as upstream's ``omitempty``."""
    counts = count_groups(
        groups, key=key, replicas=replicas, partition=partition, size=size, failed=failed
    )
    desired = desired_conditions(counts, replicas)
    conditions, became_true = merge_conditions(
        old_conditions, desired, generation=generation, now=now
    )
    conditions = failed_condition(conditions, failed, max_restarts, generation=generation, now=now)
    suffix = f", with {counts.ready} groups ready of total {replicas} groups"
    events = tuple(
        normal(_CONTENT[type_][0], UPDATE, _CONTENT[type_][1] + suffix) for type_ in became_true
    )
    counters = {
        "readyReplicas": counts.ready,
        "updatedReplicas": counts.updated,
        "replicas": sts_status_replicas,
    }
    status: dict[str, Any] = {
        "conditions": conditions,
        **{k: v for k, v in counters.items() if v},
        # Fix: upstream writes this only while empty; the value is constant, so always write it.
        "hpaPodSelector": hpa_pod_selector(lws_name),
        "observedGeneration": generation,
    }
    return StatusResult(
        status=status,
        update_done=partition == 0 and counts.updated_and_ready == replicas,
        events=events,
        ready_members=counts.ready_members,
    )


def failed_condition(
    conditions: list[dict[str, Any]],
    failed: Collection[int],
    max_restarts: int | None,
    *,
    generation: int,
    now: str,
) -> list[dict[str, Any]]:
    """KEP-820's ``Failed``: True with reason MaxGroupRestartsExceeded while any group's budget
    is exhausted, naming the groups; False (same reason, the message says none) once none is,
    and absent until one first was. Its event is posted when a group fails (plan/failures)."""
    out = [dict(x) for x in conditions]
    at = next((i for i, x in enumerate(out) if x.get("type") == c.CONDITION_FAILED), None)
    old = out.pop(at) if at is not None else None
    if failed:
        names = ", ".join(str(i) for i in sorted(failed))
        limit = f" ({max_restarts})" if max_restarts is not None else ""
        message = (
            f"group(s) {names} exceeded maxGroupRestarts{limit}: not recreated again, their "
            "pods are kept for inspection (kubectl lws status)"
        )
        status = "True"
    elif old is None:
        return out
    else:
        message, status = "No group has exceeded maxGroupRestarts", "False"
    changed = old is None or old.get("status") != status
    out.insert(
        len(out) if at is None else at,
        {
            "type": c.CONDITION_FAILED,
            "status": status,
            "observedGeneration": generation,
            "lastTransitionTime": now if changed else (old or {}).get("lastTransitionTime", now),
            "reason": c.REASON_MAX_GROUP_RESTARTS_EXCEEDED,
            "message": message,
        },
    )
    return out


# Group counters: while groups come up or roll one by one, or readiness flaps under load,
# they change every few milliseconds to seconds; a change of only these can wait.
_COUNTERS = ("replicas", "readyReplicas", "updatedReplicas")
# A counters-only change is written once the groups have been still this long (neither the
# counters nor the groups' ready members changed: the burst is over, the status is right soon
# after), or when the first change held back has waited COUNTERS_HOLD_MAX (a storm that never
# stops). The first change after a quiet spell is written at once. The ready members count,
# not only the counters: in a readiness storm readyReplicas can rest a few seconds while the
# pods flap on. Longer than a second: probes and load generators flap in bursts a second
# apart, and every status write comes back as an LWS event (another pass).
COUNTERS_QUIET = 2.0
COUNTERS_HOLD_MAX = 10.0


def counters_only(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether ``new`` differs from the stored ``old`` status in group counters only. Changes
    of conditions (Available...), observedGeneration or the HPA selector are written at once."""
    if not old:
        return False
    rest_old = {k: v for k, v in old.items() if k not in _COUNTERS}
    rest_new = {k: v for k, v in new.items() if k not in _COUNTERS}
    return contains(rest_old, rest_new) and contains(rest_new, rest_old)


@dataclass(frozen=True)
class StatusPacing:
    """What pacing the status writes of one LWS remembers between passes (monotonic
    seconds)."""

    last_write: float | None = None
    counters: tuple[Any, ...] | None = None
    """The counters computed by the last pass, and the ready members they were counted from."""
    changed_at: float | None = None
    """When those last changed."""
    held_since: float | None = None
    """When the first change not written yet was held back."""
    written_over: str | None = None
    """The resourceVersion the last write replaced: until the watch brings the write back, the
    cache shows the LWS at it, and a status computed over it is stale."""

    def seen(self, result: StatusResult, now: float) -> StatusPacing:
        counters = (*(result.status.get(k) for k in _COUNTERS), result.ready_members)
        if counters == self.counters:
            return self
        return replace(self, counters=counters, changed_at=now)

    def written(self, now: float, over: str | None = None) -> StatusPacing:
        """Written at ``now``, replacing the LWS at resourceVersion ``over`` (None if the
        write changed nothing, so no watch event follows it)."""
        return replace(self, last_write=now, held_since=None, written_over=over)


@dataclass(frozen=True)
class StatusWrite:
    patch: dict[str, Any] | None
    """The merge patch to send now, or None. It carries the resourceVersion the status was
    computed from: a pass on stale state loses its write (409) instead of undoing a newer
    one, flipping a condition back or posting its event again."""
    wait: float | None
    """A counters-only change held back: write it after this many seconds."""
    pacing: StatusPacing = field(default_factory=StatusPacing)
    """The pacing to remember (``written(now)`` of it once ``patch`` is written)."""


def plan_status_write(
    *,
    observed: Mapping[str, Any],
    resource_version: str,
    result: StatusResult,
    pacing: StatusPacing,
    now: float,
) -> StatusWrite:
    """Whether and when to write ``result`` over the ``observed`` status. A counters-only
    change (compatibility R9) is written at once after a quiet spell, else once the groups
    have been still ``COUNTERS_QUIET`` or it has been held ``COUNTERS_HOLD_MAX``; anything
    else at once. Fields that went away are sent as null. Nothing is written over the LWS
    our last write replaced: its watch event brings the next pass (a write now would only
    lose, 409, to ourselves)."""
    new = result.status
    before = pacing.changed_at
    pacing = pacing.seen(result, now)
    if pacing.written_over is not None:
        if pacing.written_over == resource_version:
            return StatusWrite(None, None, pacing)
        pacing = replace(pacing, written_over=None)
    if observed == new or (contains(observed, new) and contains(new, observed)):
        return StatusWrite(None, None, replace(pacing, held_since=None))
    if not result.events and counters_only(observed, new):
        # After a quiet spell: nothing written, and the groups still, for COUNTERS_QUIET
        # (counters flapping around the stored value are no quiet spell).
        quiet = all(t is None or now - t >= COUNTERS_QUIET for t in (pacing.last_write, before))
        if pacing.held_since is not None or not quiet:
            held = now if pacing.held_since is None else pacing.held_since
            still = now if pacing.changed_at is None else pacing.changed_at
            due = min(still + COUNTERS_QUIET, held + COUNTERS_HOLD_MAX)
            if due > now:
                return StatusWrite(None, due - now, replace(pacing, held_since=held))
    status = {**new, **{k: None for k in observed if k not in new}}
    patch = {"metadata": {"resourceVersion": resource_version}, "status": status}
    return StatusWrite(patch, None, pacing)
