"""The one model of a group: what group ``i`` of a LeaderWorkerSet looks like right now, read
from its pods and StatefulSets (upstream's getReplicaStates and updateStatus, in
pkg/controllers/leaderworkerset_controller.go).

A group ``i`` is its leader pod ``<lws>-<i>`` (created by the leader StatefulSet) and, when
size > 1, the worker StatefulSet ``<lws>-<i>`` that this leader owns, whose pods are
``<lws>-<i>-<j>`` (ordinals from 1). That leader and those objects are the group's current
incarnation; objects that merely look like ours (right labels, other owner) and those of a
previous incarnation still on their way out are not part of it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, overload

from lws_operator.api import constants as c
from lws_operator.plan.keys import RevisionKey
from lws_operator.plan.lws import names
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

    @cached_property
    def ready_members(self) -> int:
        """Its leader if ready, and its worker StatefulSet's availableReplicas."""
        available = ((self.workers or {}).get("status") or {}).get("availableReplicas")
        return int(self.leader_ready) + int(available or 0)

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

    def updated(self, size: int, key: RevisionKey) -> bool:
        return self.leader_revision == key and (size == 1 or self.workers_revision == key)


def _restarted(statuses: Any) -> bool:
    return any(
        int(cs.get("restartCount") or 0) > 0 for cs in statuses or [] if isinstance(cs, dict)
    )


def failure(pod: Obj) -> str | None:
    """Why this pod breaks its group, if it does (upstream's handleRestartPolicy,
    pkg/controllers/pod_controller.go): deleted, failed, or a
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


Counts = tuple[int, ...]
# Sums kept per table at most this many (a status and a metrics count per revision key).
SUMS_MAX = 8


class GroupTable(Sequence[Group]):
    """The groups of one LWS by index as the cache keeps them between passes (a change of a
    group's objects replaces that group alone), with sums of per-group counts kept as groups
    are replaced: a pass after one pod event counts one group, not every group of the LWS."""

    def __init__(self) -> None:
        self._groups: list[Group] = []
        self._sums: dict[Hashable, tuple[Callable[[Group], Counts], list[int]]] = {}
        self._marks: dict[Hashable, tuple[Callable[[Group], bool], set[int]]] = {}

    def __len__(self) -> int:
        return len(self._groups)

    @overload
    def __getitem__(self, index: int) -> Group: ...
    @overload
    def __getitem__(self, index: slice) -> list[Group]: ...
    def __getitem__(self, index: int | slice) -> Group | list[Group]:
        return self._groups[index]

    def __iter__(self) -> Any:
        return iter(self._groups)

    def put(self, group: Group) -> None:
        """Group ``group.index`` is now ``group`` (the next index, or one already held)."""
        i = group.index
        old = self._groups[i] if i < len(self._groups) else None
        if old is None and i != len(self._groups):
            raise IndexError(f"group {i} put after {len(self._groups)} groups")
        for count, sums in self._sums.values():
            _add(sums, count(group), 1)
            if old is not None:
                _add(sums, count(old), -1)
        for predicate, marked in self._marks.values():
            if predicate(group):
                marked.add(i)
            else:
                marked.discard(i)
        if old is None:
            self._groups.append(group)
        else:
            self._groups[i] = group

    def truncate(self, count: int) -> None:
        """Keep groups ``0..count-1`` (the leader StatefulSet scaled down)."""
        for group in self._groups[count:]:
            for counter, sums in self._sums.values():
                _add(sums, counter(group), -1)
            for _, marked in self._marks.values():
                marked.discard(group.index)
        del self._groups[count:]

    def sums(self, what: Hashable, count: Callable[[Group], Counts], width: int) -> Counts:
        """The sum of ``count`` (``width`` numbers per group) over the groups; ``what`` names
        the count with everything it depends on (the first ``count`` given for it is kept
        and applied to the groups put later)."""
        if what not in self._sums:
            if len(self._sums) >= SUMS_MAX:
                self._sums.clear()  # a plain bound: the next call sums once again
            self._sums[what] = (count, list(_total(map(count, self._groups), width)))
        return tuple(self._sums[what][1])

    def marked(self, what: Hashable, predicate: Callable[[Group], bool]) -> list[Group]:
        """The groups for which ``predicate`` holds, by index; ``what`` names the predicate
        with everything it depends on (kept like :meth:`sums`)."""
        if what not in self._marks:
            if len(self._marks) >= SUMS_MAX:
                self._marks.clear()
            self._marks[what] = (predicate, {g.index for g in self._groups if predicate(g)})
        return [self._groups[i] for i in sorted(self._marks[what][1])]


def _add(sums: list[int], counts: Counts, sign: int) -> None:
    for k, n in enumerate(counts):
        sums[k] += sign * n


def _total(counts: Iterable[Counts], width: int) -> Counts:
    out = [0] * width
    for each in counts:
        _add(out, each, 1)
    return tuple(out)


def group_at(groups: Sequence[Group], index: int) -> Group | None:
    """Group ``index`` of ``groups`` (by position when they are by index, as observed)."""
    if 0 <= index < len(groups) and (group := groups[index]).index == index:
        return group
    if isinstance(groups, GroupTable):
        return None  # by index: it has no such group
    return next((g for g in groups if g.index == index), None)


def where(
    groups: Sequence[Group], what: Hashable, predicate: Callable[[Group], bool]
) -> list[Group]:
    """The groups for which ``predicate`` holds, in order: kept up to date by a
    :class:`GroupTable` (``what`` names the predicate with everything it depends on), found
    here in any other sequence."""
    if isinstance(groups, GroupTable):
        return groups.marked(what, predicate)
    return [g for g in groups if predicate(g)]


def tally(
    groups: Sequence[Group], what: Hashable, count: Callable[[Group], Counts], width: int
) -> Counts:
    """``count`` (``width`` numbers per group) summed over ``groups``: kept up to date by a
    :class:`GroupTable` (``what`` names the count with everything it depends on), computed
    here for any other sequence."""
    if isinstance(groups, GroupTable):
        return groups.sums(what, count, width)
    return _total(map(count, groups), width)


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
