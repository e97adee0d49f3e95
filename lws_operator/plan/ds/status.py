"""The status of a DisaggregatedSet and of its role scalers, from its child LeaderWorkerSets.

Upstream v0.10.0 defines ``status.roleStatuses`` and ``status.conditions`` but never writes
them; its main branch has since (lws#933, lws#980), and this follows that: per role, the
groups that exist, are ready, and run the current revision, summed over slices and revisions;
``Available`` when every role is at its desired replicas (times the slices), all ready and
updated, else ``Progressing``, the two mutually exclusive, the transition time kept while a
condition's status holds. A scaler's status counts its role's groups and names the selector
of their leader pods (one per group, which the HPA's per-pod averaging needs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lws_operator.api import ds_constants as c
from lws_operator.plan.ds.objects import Child, scaler_selector
from lws_operator.plan.meta import generation_of

AVAILABLE_REASON = "AllRolesReady"
AVAILABLE_MESSAGE = (
    "All roles have reached their desired replica count, ready and updated to the current revision"
)
PROGRESSING_REASON = "RolloutInProgress"
PROGRESSING_MESSAGE = (
    "Not all roles have reached their desired replica count, ready and updated to the current "
    "revision"
)


def role_statuses(
    roles: Sequence[str], children: Sequence[Child], revision: str
) -> list[dict[str, Any]]:
    out = []
    for role in roles:
        mine = [ch for ch in children if ch.role == role]
        entry: dict[str, Any] = {"name": role}
        for key, value in (
            ("replicas", sum(ch.status_replicas for ch in mine)),
            ("readyReplicas", sum(ch.ready for ch in mine)),
            ("updatedReplicas", sum(ch.updated for ch in mine if ch.revision == revision)),
        ):
            if value:
                entry[key] = value  # omitempty, as upstream's Go types serialise it
        out.append(entry)
    return out


def is_available(statuses: Sequence[Mapping[str, Any]], desired: Mapping[str, int | None]) -> bool:
    """Every role at its desired total replicas (None: unknown, an External role without a
    scaler), all of them ready and updated."""
    for status in statuses:
        want = desired.get(str(status["name"]))
        if want is None:
            return False
        counts = (status.get(k, 0) for k in ("replicas", "readyReplicas", "updatedReplicas"))
        if any(n != want for n in counts):
            return False
    return True


def _condition(
    kind: str, status: str, generation: int, reason: str, message: str, now: str
) -> dict[str, Any]:
    return {
        "type": kind,
        "status": status,
        "observedGeneration": generation,
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    }


def conditions(
    old: Sequence[Mapping[str, Any]], *, available: bool, generation: int, now: str
) -> list[dict[str, Any]]:
    """Available xor Progressing, True with its reason; the other one False with the same
    reason and message; a condition keeps its transition time while its status holds (and a
    False one its reason). Other condition types are kept as they are."""
    reason, message = (
        (AVAILABLE_REASON, AVAILABLE_MESSAGE)
        if available
        else (PROGRESSING_REASON, PROGRESSING_MESSAGE)
    )
    true_type = c.CONDITION_AVAILABLE if available else c.CONDITION_PROGRESSING
    false_type = c.CONDITION_PROGRESSING if available else c.CONDITION_AVAILABLE
    out: list[dict[str, Any]] = []
    seen = set()
    for cond in old:
        kind = cond.get("type")
        seen.add(kind)
        if kind == true_type:
            if cond.get("status") == "True":
                out.append(
                    {**cond, "observedGeneration": generation, "reason": reason, "message": message}
                )
            else:
                out.append(_condition(true_type, "True", generation, reason, message, now))
        elif kind == false_type:
            if cond.get("status") == "True":
                out.append(_condition(false_type, "False", generation, reason, message, now))
            else:
                out.append({**cond, "observedGeneration": generation})
        else:
            out.append(dict(cond))
    if true_type not in seen:
        out.append(_condition(true_type, "True", generation, reason, message, now))
    return out


def ds_status(
    *,
    roles: Sequence[str],
    children: Sequence[Child],
    revision: str,
    desired: Mapping[str, int | None],
    slices: int,
    generation: int,
    old: Mapping[str, Any],
    now: str,
) -> dict[str, Any]:
    """The whole status; ``desired`` is per role and slice."""
    statuses = role_statuses(roles, children, revision)
    totals = {r: None if n is None else n * slices for r, n in desired.items()}
    available = is_available(statuses, totals)
    return {
        "observedGeneration": generation,
        "roleStatuses": statuses,
        "conditions": conditions(
            list(old.get("conditions") or []), available=available, generation=generation, now=now
        ),
    }


def status_patch(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any] | None:
    """A merge patch of ``status`` taking ``old`` to ``new`` (keys ``new`` lacks are removed),
    or None when nothing changed; lists are replaced whole by a merge patch, as they must be."""
    changed: dict[str, Any] = {k: v for k, v in new.items() if old.get(k) != v}
    changed.update({k: None for k in old if k not in new})
    return {"status": changed} if changed else None


def scaler_status(
    scaler: Mapping[str, Any], *, ds: str, role: str, replicas: int, now: str
) -> dict[str, Any]:
    generation = generation_of(scaler)
    old = scaler.get("status") or {}
    ready = {
        "type": c.SCALER_CONDITION_READY,
        "status": "True",
        "observedGeneration": generation,
        "lastTransitionTime": now,
        "reason": "Bound",
        "message": "Scaler bound to a live DisaggregatedSet role",
    }
    kept = []
    for cond in old.get("conditions") or []:
        if cond.get("type") != c.SCALER_CONDITION_READY:
            kept.append(dict(cond))
        elif cond.get("status") == "True":
            ready["lastTransitionTime"] = cond.get("lastTransitionTime") or now
    out: dict[str, Any] = {
        "selector": scaler_selector(ds, role),
        "observedGeneration": generation,
        "conditions": [*kept, ready],
    }
    if replicas:
        out["replicas"] = replicas
    return out
