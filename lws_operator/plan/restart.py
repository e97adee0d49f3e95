"""Which groups to recreate after a pod failure (contract 4.6), and which stuck pods to let go.

With ``RecreateGroupOnPodRestart`` a group is all-or-nothing: a container restart, a failed or
deleted pod anywhere in it recreates every pod of the group, with the same names and revision.
``RecreateGroupAfterStart`` waits while the group is incomplete or a pod is Pending. ``None``
(and the deprecated ``Default``) leave each pod to its StatefulSet.

Only the group's current pods count: the leader, and the worker pods of the worker StatefulSet
that this leader owns. Pods of a previous incarnation, still terminating after a recreation,
never trigger another one (upstream #805).
"""

from __future__ import annotations

import datetime
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from lws_operator.api import constants as c
from lws_operator.api.models import RestartPolicy
from lws_operator.plan.groups import Group, is_deleting, labels_of
from lws_operator.plan.meta import controller_of

# A pod still terminating this long after its grace period ended, on a node that is not Ready,
# has lost its kubelet: nothing will ever finish deleting it (upstream #508).
STUCK_AFTER = datetime.timedelta(seconds=30)


@dataclass(frozen=True)
class Recreate:
    """Recreate group ``index``: delete its leader and its worker StatefulSet and pods."""

    index: int
    leader: dict[str, Any]
    workers: dict[str, Any] | None
    members: tuple[dict[str, Any], ...]
    culprit: str  # the pod that failed
    why: str  # "restarted", "failed" or "deleted"

    @property
    def note(self) -> str:
        leader = self.leader["metadata"]["name"]
        group = labels_of(self.leader).get(c.GROUP_INDEX_LABEL, str(self.index))
        role = "Leader" if self.culprit == leader else "Worker"
        # Upstream's wording, kept for tools that match on it; ``why`` goes to the log.
        return (
            f"{role} pod {self.culprit} failed, deleted leader pod {leader} to "
            f"recreate group {group}"
        )


def recreates_groups(policy: RestartPolicy) -> bool:
    return policy in (
        RestartPolicy.RECREATE_GROUP_ON_POD_RESTART,
        RestartPolicy.RECREATE_GROUP_AFTER_START,
    )


def waits_for_start(policy: RestartPolicy, lws_annotations: Mapping[str, str]) -> bool:
    return (
        policy == RestartPolicy.RECREATE_GROUP_AFTER_START
        or c.RECREATE_GROUP_AFTER_START_ANNOTATION in lws_annotations
    )


def failure(pod: Mapping[str, Any]) -> str | None:
    """Why this pod breaks its group, if it does: deleted, failed, or a container restarted
    (counted only while Running or Pending: a finished pod's count is history)."""
    if is_deleting(pod):
        return "deleted"
    status = pod.get("status") or {}
    phase = status.get("phase")
    if phase == "Failed":
        return "failed"
    if phase in ("Running", "Pending") and any(
        int(cs.get("restartCount") or 0) > 0
        for cs in status.get("containerStatuses") or []
        if isinstance(cs, dict)
    ):
        return "restarted"
    return None


def pods_by_controller(pods: Mapping[str, Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Pods by the UID of their controller owner, so each group finds its workers at once."""
    out: dict[str, list[dict[str, Any]]] = {}
    for pod in pods.values():
        if (ref := controller_of(dict(pod))) is not None:
            out.setdefault(str(ref.get("uid", "")), []).append(dict(pod))
    return out


def group_members(
    group: Group, by_controller: Mapping[str, list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    """The leader and the pods of the worker StatefulSet it owns."""
    if group.leader is None:
        return []
    members = [group.leader]
    if group.workers is not None:
        members += by_controller.get(str(group.workers["metadata"].get("uid", "")), [])
    return members


def _pending(index: int, size: int, pods: Mapping[str, Mapping[str, Any]]) -> bool:
    """Upstream's test: the group lacks pods, or one of them is Pending."""
    mine = [p for p in pods.values() if labels_of(p).get(c.GROUP_INDEX_LABEL) == str(index)]
    return len(mine) != size or any((p.get("status") or {}).get("phase") == "Pending" for p in mine)


def plan_recreations(
    *,
    policy: RestartPolicy,
    lws_annotations: Mapping[str, str],
    size: int,
    groups: list[Group],
    pods: Mapping[str, Mapping[str, Any]],
    lost_pods: Collection[tuple[str, str]] = (),
) -> list[Recreate]:
    """Groups to recreate now. ``lost_pods`` are (name, controller owner uid) of pods seen
    deleted: a pod force-deleted, or gone before a reconcile saw it terminating, still counts."""
    if not recreates_groups(policy):
        return []
    after_start = waits_for_start(policy, lws_annotations)
    lost_by_owner: dict[str, str] = {owner: name for name, owner in lost_pods}
    plans = []
    by_controller = pods_by_controller(pods)
    for group in groups:
        leader = group.leader
        if leader is None or is_deleting(leader):
            continue
        members = group_members(group, by_controller)
        leader_key = labels_of(leader).get(c.REVISION_KEY)
        culprit, why = None, None
        for pod in members:
            # A worker of another revision is being replaced by a rollout, not failing.
            if pod is not leader and labels_of(pod).get(c.REVISION_KEY) != leader_key:
                continue
            if (why := failure(pod)) is not None:
                culprit = pod["metadata"]["name"]
                break
        if culprit is None and group.workers is not None:
            lost = lost_by_owner.get(str(group.workers["metadata"].get("uid", "")))
            if lost is not None:
                culprit, why = lost, "deleted"
        if culprit is None or why is None:
            continue
        if after_start and _pending(group.index, size, pods):
            continue
        plans.append(
            Recreate(
                index=group.index,
                leader=leader,
                workers=group.workers,
                members=tuple(members),
                culprit=culprit,
                why=why,
            )
        )
    return plans


def _parse_time(value: Any) -> datetime.datetime | None:
    try:
        return datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None


def overdue_terminating(
    pods: Mapping[str, Mapping[str, Any]], now: datetime.datetime
) -> list[tuple[dict[str, Any], datetime.datetime]]:
    """Pods still terminating after their grace period (deletionTimestamp is when it ends), with
    the time they became overdue; the caller decides, by their node, whether they are stuck."""
    out = []
    for pod in pods.values():
        deadline = _parse_time((pod.get("metadata") or {}).get("deletionTimestamp"))
        if deadline is not None and now - deadline >= STUCK_AFTER:
            out.append((dict(pod), deadline))
    return out


def next_overdue(pods: Mapping[str, Mapping[str, Any]], now: datetime.datetime) -> float | None:
    """Seconds until the next terminating pod becomes overdue, if any is still on time."""
    waits = []
    for pod in pods.values():
        deadline = _parse_time((pod.get("metadata") or {}).get("deletionTimestamp"))
        if deadline is not None and now - deadline < STUCK_AFTER:
            waits.append((deadline + STUCK_AFTER - now).total_seconds())
    return min(waits) if waits else None


def node_lost(node: Mapping[str, Any] | None) -> bool:
    """A node that is gone, out of service, or not Ready cannot finish deleting its pods."""
    if node is None:
        return True
    taints = (node.get("spec") or {}).get("taints") or []
    if any(t.get("key") == "node.kubernetes.io/out-of-service" for t in taints):
        return True
    conditions = (node.get("status") or {}).get("conditions") or []
    return not any(x.get("type") == "Ready" and x.get("status") == "True" for x in conditions)
