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
from lws_operator.plan.events import GROUPS_PROGRESSING, GROUPS_UPDATING, UPDATE, Event, normal
from lws_operator.plan.groups import Group

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


@dataclass(frozen=True)
class StatusResult:
    status: dict[str, Any]
    """The status to write, camelCase as in the API."""
    update_done: bool
    """P == 0 and all R groups updated and ready: old revisions may be truncated."""
    events: tuple[Event, ...]
    """A Normal event for each condition that became True in this pass (contract 3.10)."""


def hpa_pod_selector(lws_name: str) -> str:
    """Leader pods only: the HPA scales groups, one leader per group."""
    return f"{c.SET_NAME_LABEL}={lws_name},{c.WORKER_INDEX_LABEL}=0"


def count_groups(
    groups: Sequence[Group], *, key: str, replicas: int, partition: int, size: int
) -> GroupCounts:
    """Contract 4.13 counting rules; ``key`` is the current revision's."""
    ready = updated = current = current_updated = ready_non_burst = updated_and_ready = 0
    for group in groups:
        if group.leader is None or not group.workers_present(size):
            # Kept from upstream: a group without its worker sts is not counted anywhere. Its
            # ready/updated counts would be 0 anyway, and counting it as "current" would
            # report UpdateInProgress while a new LWS is still creating its worker sts.
            continue
        is_ready = group.ready(size)
        is_updated = group.updated(size, key)
        is_current = partition <= group.index < replicas
        ready += is_ready
        updated += is_updated
        current += is_current
        current_updated += is_current and is_updated
        ready_non_burst += is_ready and group.index < replicas
        updated_and_ready += is_current and is_ready and is_updated
    return GroupCounts(ready, updated, current, current_updated, ready_non_burst, updated_and_ready)


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
    key: str,
    replicas: int,
    partition: int,
    size: int,
    sts_status_replicas: int,
    generation: int,
    lws_name: str,
    old_conditions: Sequence[Mapping[str, Any]],
    now: str,
) -> StatusResult:
    """The status for one pass. ``replicas``/``partition`` are the LWS spec values, ``key``
    the current revision's; ``sts_status_replicas`` is the leader sts status.replicas (surge
    groups included). Counters that are 0 are left out, as upstream's ``omitempty``."""
    counts = count_groups(groups, key=key, replicas=replicas, partition=partition, size=size)
    desired = desired_conditions(counts, replicas)
    conditions, became_true = merge_conditions(
        old_conditions, desired, generation=generation, now=now
    )
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


@dataclass(frozen=True)
class StatusWrite:
    patch: dict[str, Any] | None
    """The merge patch to send now, or None. It carries the resourceVersion the status was
    computed from: a pass on stale state loses its write (409) instead of undoing a newer
    one, flipping a condition back or posting its event again."""
    wait: float | None
    """A counters-only change held back: write it after this many seconds."""


def plan_status_write(
    *,
    observed: Mapping[str, Any],
    resource_version: str,
    result: StatusResult,
    last_write: float | None,
    now: float,
) -> StatusWrite:
    """Whether and when to write ``result`` over the ``observed`` status; ``last_write`` and
    ``now`` are monotonic seconds. Counter-only changes are written at most once per
    ``COUNTERS_WRITE_INTERVAL`` (compatibility R9); fields that went away are sent as null."""
    new = result.status
    if contains(observed, new) and contains(new, observed):
        return StatusWrite(None, None)
    wait = 0.0 if last_write is None else last_write + COUNTERS_WRITE_INTERVAL - now
    if wait > 0 and not result.events and counters_only(observed, new):
        return StatusWrite(None, wait)
    status = {**new, **{k: None for k in observed if k not in new}}
    return StatusWrite({"metadata": {"resourceVersion": resource_version}, "status": status}, None)
