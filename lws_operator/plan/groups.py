"""What the groups of a LeaderWorkerSet look like right now, read from its pods and
StatefulSets (contract 4.4 "per-index state" and 4.13).

A group ``i`` is its leader pod ``<lws>-<i>`` (created by the leader StatefulSet) and, when
size > 1, the worker StatefulSet ``<lws>-<i>`` that the leader owns. Objects that merely look
like ours (right labels, other owner) are not part of any group.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lws_operator.api import constants as c
from lws_operator.plan.meta import is_controlled_by


@dataclass(frozen=True)
class Group:
    index: int
    leader: dict[str, Any] | None
    workers: dict[str, Any] | None
    leader_ready: bool
    workers_ready: bool
    leader_key: str | None
    workers_key: str | None

    def ready(self, size: int) -> bool:
        return self.leader_ready and (size == 1 or self.workers_ready)

    def updated(self, size: int, key: str) -> bool:
        return self.leader_key == key and (size == 1 or self.workers_key == key)


def labels_of(obj: Mapping[str, Any]) -> dict[str, str]:
    labels = (obj.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, dict) else {}


def is_deleting(obj: Mapping[str, Any]) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def pod_ready(pod: Mapping[str, Any]) -> bool:
    """Running with condition Ready=True."""
    status = pod.get("status") or {}
    if status.get("phase") != "Running":
        return False
    return any(
        isinstance(cond, dict) and cond.get("type") == "Ready" and cond.get("status") == "True"
        for cond in status.get("conditions") or []
    )


def statefulset_ready(sts: Mapping[str, Any]) -> bool:
    """All replicas available and no rollout of its own in progress (upstream's rule)."""
    spec, status = sts.get("spec") or {}, sts.get("status") or {}
    return (spec.get("replicas") or 0) == (status.get("availableReplicas") or 0) and status.get(
        "currentRevision"
    ) == status.get("updateRevision")


def leader_index(pod: Mapping[str, Any], lws_name: str) -> int | None:
    """The group index of a leader pod named ``<lws>-<i>`` whose group-index label agrees."""
    name = str((pod.get("metadata") or {}).get("name", ""))
    prefix = f"{lws_name}-"
    if not name.startswith(prefix) or not name[len(prefix) :].isdigit():
        return None
    index = int(name[len(prefix) :])
    label = labels_of(pod).get(c.GROUP_INDEX_LABEL)
    return index if label is None or label == str(index) else None


def observe_groups(
    *,
    lws_name: str,
    count: int,
    leader_sts_uid: str | None,
    pods: Mapping[str, Mapping[str, Any]],
    statefulsets: Mapping[str, Mapping[str, Any]],
) -> list[Group]:
    """Groups 0..count-1, by index (a missing leader is a group with ``leader=None``)."""
    groups = []
    for i in range(count):
        name = f"{lws_name}-{i}"
        leader = pods.get(name)
        if leader is not None and (
            labels_of(leader).get(c.WORKER_INDEX_LABEL) != "0"
            or leader_index(leader, lws_name) != i
            or leader_sts_uid is None
            or not is_controlled_by(dict(leader), leader_sts_uid)
        ):
            leader = None
        workers = statefulsets.get(name) if leader is not None else None
        if workers is not None and leader is not None:
            leader_uid = str((leader.get("metadata") or {}).get("uid", ""))
            if not is_controlled_by(dict(workers), leader_uid):
                workers = None  # a previous incarnation's, on its way out
        groups.append(
            Group(
                index=i,
                leader=dict(leader) if leader is not None else None,
                workers=dict(workers) if workers is not None else None,
                leader_ready=leader is not None and pod_ready(leader),
                workers_ready=workers is not None and statefulset_ready(workers),
                leader_key=labels_of(leader).get(c.REVISION_KEY) if leader is not None else None,
                workers_key=labels_of(workers).get(c.REVISION_KEY) if workers is not None else None,
            )
        )
    return groups
