"""The LeaderWorkerSet status: group counts and the Available / Progressing / UpdateInProgress
conditions.

Contract: upstream-contract.md 4.13 and 1.3. Pure: the caller observes the groups and passes
the clock in. Deliberate departures from upstream are marked "Fix:" and listed in
docs/compatibility.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lws_operator.api import constants as c
from lws_operator.plan.diff import contains

# Condition reasons; GroupsProgressing and GroupsUpdating are also event reasons elsewhere.
REASON_ALL_GROUPS_READY = "AllGroupsReady"
REASON_GROUPS_UPDATING = "GroupsUpdating"
REASON_GROUPS_PROGRESSING = "GroupsProgressing"

# makeCondition: the only conditions ever set True, with fixed reason and message.
_CONTENT: Mapping[str, tuple[str, str]] = {
    c.CONDITION_AVAILABLE: (REASON_ALL_GROUPS_READY, "All replicas are ready"),
    c.CONDITION_UPDATE_IN_PROGRESS: (REASON_GROUPS_UPDATING, "Rolling Upgrade is in progress"),
    c.CONDITION_PROGRESSING: (REASON_GROUPS_PROGRESSING, "Replicas are progressing"),
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
class ObservedGroup:
    """One leader pod, with its worker sts. With size == 1 the worker flags are ignored."""

    index: int
    leader_ready: bool
    """Leader pod Running and Ready."""
    leader_updated: bool
    """Leader's revision key == the current one."""
    workers_present: bool
    workers_ready: bool
    """Worker sts spec.replicas == status.availableReplicas, currentRevision == updateRevision."""
    workers_updated: bool


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
    skipped: tuple[int, ...]
    """Indices of groups left out because their worker sts is missing."""


@dataclass(frozen=True)
class ConditionEvent:
    """A Normal event for a condition that became True in this pass (contract 3.10)."""

    reason: str
    note: str


@dataclass(frozen=True)
class StatusResult:
    status: dict[str, Any]
    """The status to write, camelCase as in the API."""
    update_done: bool
    """P == 0 and all R groups updated and ready: old revisions may be truncated."""
    changed: tuple[str, ...]
    """Condition types whose status, reason or message changed in this pass."""
    events: tuple[ConditionEvent, ...]
    counts: GroupCounts


def hpa_pod_selector(lws_name: str) -> str:
    """Leader pods only: the HPA scales groups, one leader per group."""
    return f"{c.SET_NAME_LABEL}={lws_name},{c.WORKER_INDEX_LABEL}=0"


def count_groups(
    groups: Sequence[ObservedGroup], *, replicas: int, partition: int, size: int
) -> GroupCounts:
    """Contract 4.13 counting rules."""
    ready = updated = current = current_updated = ready_non_burst = updated_and_ready = 0
    skipped: list[int] = []
    for group in groups:
        workers = size == 1
        if not workers and not group.workers_present:
            # Kept from upstream: a group without its worker sts is not counted anywhere. Its
            # ready/updated counts would be 0 anyway, and counting it as "current" would
            # report UpdateInProgress while a new LWS is still creating its worker sts.
            skipped.append(group.index)
            continue
        is_ready = group.leader_ready and (workers or group.workers_ready)
        is_updated = group.leader_updated and (workers or group.workers_updated)
        is_current = partition <= group.index < replicas
        ready += is_ready
        updated += is_updated
        current += is_current
        current_updated += is_current and is_updated
        ready_non_burst += is_ready and group.index < replicas
        updated_and_ready += is_current and is_ready and is_updated
    return GroupCounts(
        ready, updated, current, current_updated, ready_non_burst, updated_and_ready, tuple(skipped)
    )


def desired_conditions(counts: GroupCounts, replicas: int) -> tuple[str, ...]:
    """The conditions to set True, in upstream's order (4.13 "Choosing the condition")."""
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
) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """Set every ``desired`` condition True (setCondition), returning the new list, the types
    that changed and the types that became True.

    Fix: upstream's setConditions short-circuits after the first changed condition, so
    Progressing lagged UpdateInProgress by a reconcile; here all are applied in one pass.
    Fix: a True condition that stays True keeps its lastTransitionTime when only the
    generation moved (upstream replaced it, churning the time and re-emitting the event).
    """
    conditions = [dict(cond) for cond in old]
    changed: list[str] = []
    became_true: list[str] = []

    def mark(type_: str, into: list[str]) -> None:
        if type_ not in into:
            into.append(type_)

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
                    mark(type_, changed)
                    mark(type_, became_true)
                elif (cond.get("reason"), cond.get("message")) != (reason, message):
                    cond.update(reason=reason, message=message)  # e.g. an older controller's
                    mark(type_, changed)
            elif frozenset({other, type_}) in _EXCLUSIVE and cond.get("status") == "True":
                # Kept from upstream: only status and time change; the False condition keeps
                # the reason and message of its True state.
                cond.update(status="False", lastTransitionTime=now)
                mark(other, changed)
        if not found:
            conditions.append(_new_condition(type_, generation=generation, now=now))
            mark(type_, changed)
            mark(type_, became_true)
    for cond in conditions:
        cond["observedGeneration"] = generation
    return conditions, changed, became_true


def compute_status(
    *,
    groups: Sequence[ObservedGroup],
    replicas: int,
    partition: int,
    size: int,
    sts_status_replicas: int,
    generation: int,
    lws_name: str,
    old_conditions: Sequence[Mapping[str, Any]],
    now: str,
) -> StatusResult:
    """The status for one pass. ``replicas``/``partition`` are the LWS spec values;
    ``sts_status_replicas`` is the leader sts status.replicas (surge groups included)."""
    counts = count_groups(groups, replicas=replicas, partition=partition, size=size)
    desired = desired_conditions(counts, replicas)
    conditions, changed, became_true = merge_conditions(
        old_conditions, desired, generation=generation, now=now
    )
    suffix = f", with {counts.ready} groups ready of total {replicas} groups"
    events = tuple(
        ConditionEvent(_CONTENT[type_][0], _CONTENT[type_][1] + suffix) for type_ in became_true
    )
    status: dict[str, Any] = {
        "conditions": conditions,
        "readyReplicas": counts.ready,
        "updatedReplicas": counts.updated,
        "replicas": sts_status_replicas,
        # Fix: upstream writes this only while empty; the value is constant, so always write it.
        "hpaPodSelector": hpa_pod_selector(lws_name),
        "observedGeneration": generation,
    }
    return StatusResult(
        status=status,
        update_done=partition == 0 and counts.updated_and_ready == replicas,
        changed=tuple(changed),
        events=events,
        counts=counts,
    )


# Group counters: while groups come up or roll one by one they change every few hundred
# milliseconds; a change of only these can wait for the next status write.
_COUNTERS = ("replicas", "readyReplicas", "updatedReplicas")
# At most one counters-only status write per LeaderWorkerSet in this many seconds.
COUNTERS_WRITE_INTERVAL = 1.0


def counters_only(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether ``new`` differs from the stored ``old`` status in group counters only. Changes
    of conditions (Available...), observedGeneration or the HPA selector are written at once."""
    if not old:
        return False
    rest_old = {k: v for k, v in old.items() if k not in _COUNTERS}
    rest_new = {k: v for k, v in new.items() if k not in _COUNTERS}
    return contains(rest_old, rest_new) and contains(rest_new, rest_old)
