"""The one model of a group: what group ``i`` of a LeaderWorkerSet looks like right now, read
from its pods and StatefulSets (contract 4.4 "per-index state" and 4.13).

A group ``i`` is its leader pod ``<lws>-<i>`` (created by the leader StatefulSet) and, when
size > 1, the worker StatefulSet ``<lws>-<i>`` that this leader owns, whose pods are
``<lws>-<i>-<j>`` (ordinals from 1). That leader and those objects are the group's current
incarnation; objects that merely look like ours (right labels, other owner) and those of a
previous incarnation still on their way out are not part of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from lws_operator.api import constants as c
from lws_operator.plan import names
from lws_operator.plan.meta import (
    controller_of,
    is_controlled_by,
    is_deleting,
    labels_of,
    name_of,
    pod_ready,
    statefulset_ready,
    statefulset_replicas,
    uid_of,
)

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class Group:
    index: int
    leader: Obj | None
    """The leader pod, if it exists and the leader StatefulSet controls it."""
    workers: Obj | None = None
    """The worker StatefulSet that this leader controls (None with size 1, or not made yet)."""
    worker_pods: tuple[Obj, ...] = ()
    """The pods that worker StatefulSet controls, by ordinal."""

    @property
    def members(self) -> tuple[Obj, ...]:
        """The leader and its worker pods: the pods whose failure breaks the group."""
        return () if self.leader is None else (self.leader, *self.worker_pods)

    @cached_property
    def leader_live(self) -> bool:
        """Its leader exists and is not being deleted (else its recreation is under way)."""
        return self.leader is not None and not is_deleting(self.leader)

    @cached_property
    def leader_ready(self) -> bool:
        return self.leader is not None and pod_ready(self.leader)

    @cached_property
    def workers_ready(self) -> bool:
        return self.workers is not None and statefulset_ready(self.workers)

    # Cached: a Group is observed once per change of its objects and read by every pass of
    # its LWS (plan/ reads these for each group on every pod event).
    @cached_property
    def leader_revision(self) -> str | None:
        """The revision key the leader pod carries (the group's template revision)."""
        return labels_of(self.leader).get(c.REVISION_KEY) if self.leader is not None else None

    @cached_property
    def workers_revision(self) -> str | None:
        return labels_of(self.workers).get(c.REVISION_KEY) if self.workers is not None else None

    @cached_property
    def nodes(self) -> frozenset[str]:
        """The nodes its members are bound to."""
        return frozenset(
            str(node) for pod in self.members if (node := (pod.get("spec") or {}).get("nodeName"))
        )

    @cached_property
    def broken_by(self) -> tuple[str, str] | None:
        """(pod name, why) of the first member whose failure breaks the group: the leader, or
        a worker of the leader's revision (one of another revision is being rolled)."""
        if self.leader is None:
            return None
        for pod in self.members:
            if (
                pod is not self.leader
                and labels_of(pod).get(c.REVISION_KEY) != self.leader_revision
            ):
                continue
            if (why := failure(pod)) is not None:
                return name_of(pod), why
        return None

    def workers_present(self, size: int) -> bool:
        return size == 1 or self.workers is not None

    def ready(self, size: int) -> bool:
        return self.leader_ready and (size == 1 or self.workers_ready)

    def updated(self, size: int, key: str) -> bool:
        return self.leader_revision == key and (size == 1 or self.workers_revision == key)


def _restarted(statuses: Any) -> bool:
    return any(
        int(cs.get("restartCount") or 0) > 0 for cs in statuses or [] if isinstance(cs, dict)
    )


def failure(pod: Obj) -> str | None:
    """Why this pod breaks its group, if it does (contract 4.6): deleted, failed, or a
    container or init container restarted (counted only while Running or Pending: a finished
    pod's count is history), as upstream's ContainerRestarted and PodDeleted. A failed pod
    stays "failed" once deleted: its deletion (by its StatefulSet, the pod GC) follows from the
    failure, which is the evidence to keep."""
    status = pod.get("status") or {}
    phase = status.get("phase")
    if phase == "Failed":
        return "failed"
    if is_deleting(pod):
        return "deleted"
    if phase in ("Running", "Pending") and (
        _restarted(status.get("initContainerStatuses"))
        or _restarted(status.get("containerStatuses"))
    ):
        return "restarted"
    return None


def leader_index(pod: Obj, lws_name: str) -> int | None:
    """The group index of a leader pod named ``<lws>-<i>`` whose group-index label agrees."""
    name = name_of(pod)
    prefix = f"{lws_name}-"
    if not name.startswith(prefix) or not name[len(prefix) :].isdigit():
        return None
    index = int(name[len(prefix) :])
    label = labels_of(pod).get(c.GROUP_INDEX_LABEL)
    return index if label is None or label == str(index) else None


def observe_group(
    index: int,
    *,
    lws_name: str,
    leader_sts_uid: str | None,
    pods: Mapping[str, Obj],
    statefulsets: Mapping[str, Obj],
) -> Group:
    """Group ``index``, found by name (a few lookups, whatever the size of the LWS)."""
    name = names.leader_pod_name(lws_name, index)
    leader = pods.get(name)
    if leader is not None and (
        labels_of(leader).get(c.WORKER_INDEX_LABEL) != "0"
        or leader_index(leader, lws_name) != index
        or leader_sts_uid is None
        or not is_controlled_by(leader, leader_sts_uid)
    ):
        leader = None
    if leader is None:
        return Group(index, None)
    workers = statefulsets.get(names.worker_statefulset_name(name))
    if workers is None or not is_controlled_by(workers, uid_of(leader)):
        return Group(index, leader)  # none yet, or a previous incarnation's on its way out
    workers_uid = uid_of(workers)
    worker_pods = tuple(
        pod
        for ordinal in range(1, statefulset_replicas(workers) + 1)
        if (pod := pods.get(names.worker_pod_name(name, ordinal))) is not None
        and is_controlled_by(pod, workers_uid)
    )
    return Group(index, leader, workers, worker_pods)


def observe_groups(
    *,
    lws_name: str,
    count: int,
    leader_sts_uid: str | None,
    pods: Mapping[str, Obj],
    statefulsets: Mapping[str, Obj],
) -> list[Group]:
    """Groups 0..count-1, by index (a missing leader is a group with ``leader=None``)."""
    return [
        observe_group(
            i,
            lws_name=lws_name,
            leader_sts_uid=leader_sts_uid,
            pods=pods,
            statefulsets=statefulsets,
        )
        for i in range(count)
    ]


def made_by_groups(
    pod: Obj, *, lws_name: str, lws_uid: str, statefulsets: Mapping[str, Obj]
) -> bool:
    """Whether one of this LWS's StatefulSets made ``pod``: its controller is a StatefulSet
    named ``<lws>`` or ``<lws>-<i>``, which is ours (controlled by the LWS, or by a leader pod
    ``<lws>-<i>``) while it exists. A previous incarnation's worker StatefulSet may be gone
    already while its pods still terminate: then the name is what is left to go by."""
    owner = controller_of(pod)
    if owner is None or owner.get("kind") != "StatefulSet":
        return False
    name = str(owner.get("name") or "")
    if name != lws_name and leader_index({"metadata": {"name": name}}, lws_name) is None:
        return False
    sts = statefulsets.get(name)
    if sts is None or uid_of(sts) != owner.get("uid"):
        return True  # deleted, or replaced by a later incarnation's since
    sts_owner = controller_of(sts) or {}
    if name == lws_name:
        return sts_owner.get("kind") == c.KIND and sts_owner.get("uid") == lws_uid
    return sts_owner.get("kind") == "Pod" and sts_owner.get("name") == name
