"""Which groups to recreate after a pod failure (upstream's handleRestartPolicy,
pkg/controllers/pod_controller.go), and which stuck pods to let go.

With ``RecreateGroupOnPodRestart`` a group is all-or-nothing: a container restart, a failed or
deleted pod anywhere in it recreates every pod of the group, with the same names and revision.
``RecreateGroupAfterStart`` waits while the group is incomplete or a pod is Pending. ``None``
(and the deprecated ``Default``) leave each pod to its StatefulSet.

Only the group's current incarnation counts (plan/lws/groups.py): pods of a previous one, still
terminating after a recreation, never trigger another (upstream #805).

A pod deleted at once (force-deleted, or gone before any reconcile saw it terminating) leaves
no trace in the observed pods: its replacement has the same name. Its DELETED watch event is
kept as a :class:`Lost` pod until the group it belonged to has been decided on: it breaks that
incarnation (and is settled by its recreation), or is dropped as upstream drops the event in
hand: when the group is still starting under ``RecreateGroupAfterStart``, when the incarnation
is already gone, when the policy does not recreate groups.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from lws_operator.api import constants as c
from lws_operator.api.models import RestartPolicy
from lws_operator.plan.events import DELETE, RECREATE_GROUP, Event, normal, warning
from lws_operator.plan.lws import names
from lws_operator.plan.lws.groups import Group, Obj, failure, where
from lws_operator.plan.meta import (
    controller_of,
    deletion_timestamp_of,
    is_deleting,
    labels_of,
    name_of,
    uid_of,
)
from lws_operator.plan.timestamps import parse_time
from lws_operator.plan.writes import Write

# A pod still terminating this long after its grace period ended, on a node that is not Ready,
# has lost its kubelet: nothing will ever finish deleting it (upstream #508).
STUCK_AFTER = datetime.timedelta(seconds=30)


@dataclass(frozen=True)
class Lost:
    """A worker pod seen deleted (its DELETED watch event), with what identifies the group
    incarnation it belonged to."""

    name: str
    uid: str
    owner_uid: str
    """Its controller: the worker StatefulSet of one incarnation."""
    group_index: str
    revision: str
    why: str = "deleted"
    """"failed" when its last state was phase Failed (plan/groups.failure)."""

    @classmethod
    def of(cls, pod: Obj) -> Lost | None:
        """The record of a deleted pod, if it was a worker pod (a leader's deletion already
        starts a new incarnation: its leader StatefulSet makes a new leader at once)."""
        labels = labels_of(pod)
        owner = controller_of(pod)
        if labels.get(c.WORKER_INDEX_LABEL) in (None, "0") or owner is None:
            return None
        return cls(
            name=name_of(pod),
            uid=uid_of(pod),
            owner_uid=str(owner.get("uid") or ""),
            group_index=labels.get(c.GROUP_INDEX_LABEL, ""),
            revision=labels.get(c.REVISION_KEY, ""),
            why="failed" if failure(pod) == "failed" else "deleted",
        )


def undecided(lost: tuple[Lost, ...], decided: set[str]) -> tuple[tuple[Lost, ...], set[str]]:
    """The deleted worker pods not decided on yet, and of the uids ``decided`` those the cache
    still shows: the others' records are gone for good (a uid never comes back), so the memory
    of what was decided stays as small as the cache's records."""
    shown = {r.uid for r in lost}
    kept = decided & shown
    return (tuple(r for r in lost if r.uid not in kept) if kept else lost), kept


FAILED_GROUP_GRACE = 1
"""Seconds a failed group's pods are given to stop, by default (docs/compatibility.md)."""


def failed_group_grace(
    annotations: Mapping[str, str], configured: int | None
) -> tuple[int | None, str | None]:
    """The grace period of a failed group's pods for this LWS: its annotation
    ``lws-operator.x-k8s.io/failed-group-grace-seconds`` (seconds >= 1, or ``pod``: each pod's
    own), else the operator's configuration (None: each pod's own); and an error naming the
    annotation when its value is not one of those (the configuration applies meanwhile). Not
    0: a pod deleted with no grace is removed before its containers are stopped, and its
    replacement, of the same name, could run beside them."""
    value = annotations.get(c.FAILED_GROUP_GRACE_ANNOTATION)
    if value is None:
        return configured, None
    if value == "pod":
        return None, None
    if value.isdigit() and int(value) >= 1:
        return int(value), None
    return configured, (
        f"metadata.annotations[{c.FAILED_GROUP_GRACE_ANNOTATION}]: Invalid value: {value!r}: "
        'must be a whole number of seconds >= 1, or "pod" (each pod\'s own '
        "terminationGracePeriodSeconds)"
    )


def group_deletion(
    leader: Obj, workers: Obj | None, members: Sequence[Obj], grace: int | None = None
) -> tuple[Write, ...]:
    """The deletion of a group whole, in order: its leader first, the commit point (its
    StatefulSet makes a new one at once; if it fails nothing else is touched, so the next
    pass still sees the failure), then together the worker StatefulSet, in the foreground
    (it stays, and makes no pod, until its pods are gone: Kueue ungates at once a pod whose
    StatefulSet it cannot find), and the worker pods not already going (so they start
    terminating now). Each only the object seen (its uid). Upstream deletes the leader in
    the foreground and waits for every dependent to be gone.

    ``grace``: the pods' grace period, never longer than a pod's own
    (``terminationGracePeriodSeconds``); None gives each its own."""

    def delete(kind: str, obj: Obj, propagation: Literal["Background", "Foreground"]) -> Write:
        seconds = None if grace is None or kind != "Pod" else min(grace, _own_grace(obj))
        return Write(
            "delete",
            kind,
            name_of(obj),
            uid=uid_of(obj),
            propagation=propagation,
            grace_seconds=seconds,
        )

    rest = [delete("StatefulSet", workers, "Foreground")] if workers is not None else []
    rest += [
        delete("Pod", p, "Background") for p in members if p is not leader and not is_deleting(p)
    ]
    return (delete("Pod", leader, "Background"), *rest)


def _own_grace(pod: Obj) -> int:
    """A pod's terminationGracePeriodSeconds (the API server's default: 30)."""
    own = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
    return own if isinstance(own, int) else 30


@dataclass(frozen=True)
class Recreate:
    """Recreate group ``index``: delete its leader and its worker StatefulSet and pods."""

    index: int
    leader: Obj
    workers: Obj | None
    members: tuple[Obj, ...]
    culprit: str  # the pod that failed
    why: str  # "restarted", "failed", "deleted", or "requested" (plan/lws/failures.py)
    lost: frozenset[str] = frozenset()
    """Uids of the Lost pods this recreation settles."""

    @property
    def event(self) -> Event:
        return normal(RECREATE_GROUP, DELETE, self.note)

    @property
    def note(self) -> str:
        leader = name_of(self.leader)
        group = labels_of(self.leader).get(c.GROUP_INDEX_LABEL, str(self.index))
        if self.why == "requested":
            return f"Recreation requested, deleted leader pod {leader} to recreate group {group}"
        role = "Leader" if self.culprit == leader else "Worker"
        # Upstream's wording, kept for tools that match on it; ``why`` goes to the log.
        return (
            f"{role} pod {self.culprit} failed, deleted leader pod {leader} to "
            f"recreate group {group}"
        )


@dataclass(frozen=True)
class Recreations:
    groups: tuple[Recreate, ...]
    dropped: frozenset[str]
    """Uids of Lost pods decided on without a recreation: forget them now. Those of each
    recreation are forgotten once its leader is deleted."""


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


def _pending(lws_name: str, group: Group, size: int, pods: Mapping[str, Obj]) -> bool:
    """Upstream's test: the group lacks pods, or one of them is Pending (the pods named as the
    group's, whichever incarnation they belong to)."""
    leader = names.leader_pod_name(lws_name, group.index)
    mine = [pods.get(leader)] + [pods.get(names.worker_pod_name(leader, j)) for j in range(1, size)]
    present = [p for p in mine if p is not None]
    return len(present) != size or any(
        (p.get("status") or {}).get("phase") == "Pending" for p in present
    )


def plan_recreations(
    *,
    policy: RestartPolicy,
    lws_annotations: Mapping[str, str],
    lws_name: str,
    size: int,
    groups: Sequence[Group],
    pods: Mapping[str, Obj],
    lost: Collection[Lost] = (),
) -> Recreations:
    """Groups to recreate now, and the Lost pods decided on (see the module docstring)."""
    if not recreates_groups(policy):
        return Recreations((), frozenset(r.uid for r in lost))
    after_start = waits_for_start(policy, lws_annotations)
    by_group: dict[str, list[Lost]] = {}
    for record in lost:
        by_group.setdefault(record.group_index, []).append(record)
    # Lost pods of groups that no longer exist (scaled down) are never judged.
    indices = {str(g.index) for g in groups} if by_group else set()
    dropped = {r.uid for index, rs in by_group.items() if index not in indices for r in rs}
    plans = []
    # Without a Lost record only a group a member broke can need anything: those are kept
    # as groups change (plan/lws/groups.py), so a pass looks at them, not at every group.
    look = where(groups, "broken", _broken) if not by_group else groups
    for group in look:
        records = by_group.get(str(group.index), []) if by_group else []
        current: list[Lost] = []
        if records and group.workers is not None:
            # This incarnation is known: records of any other are of an older one.
            current = [r for r in records if r.owner_uid == uid_of(group.workers)]
            dropped.update(r.uid for r in records if r not in current)
        leader = group.leader
        if leader is None or not group.leader_live:
            dropped.update(r.uid for r in current)  # its recreation is under way
            continue
        found = group.broken_by
        if found is None and not current:
            continue  # the common case: nothing failed, nothing lost
        if found is None:
            # A worker of another revision is being replaced by a rollout, not failing.
            rolled = [r for r in current if r.revision != group.leader_revision]
            dropped.update(r.uid for r in rolled)
            if lost_one := next((r for r in current if r not in rolled), None):
                found = (lost_one.name, lost_one.why)
        if found is None:
            continue
        if after_start and _pending(lws_name, group, size, pods):
            dropped.update(r.uid for r in current)  # as upstream, which skips the event
            continue
        plans.append(
            Recreate(
                index=group.index,
                leader=leader,
                workers=group.workers,
                members=group.members,
                culprit=found[0],
                why=found[1],
                lost=frozenset(r.uid for r in current),
            )
        )
    return Recreations(tuple(plans), frozenset(dropped))


def _broken(group: Group) -> bool:
    return group.broken_by is not None


@dataclass(frozen=True)
class StuckPods:
    release: tuple[Obj, ...]
    """Pods to force-delete."""
    wait: float | None
    """Seconds until the next terminating pod of ours becomes overdue, if one is on time."""

    @staticmethod
    def event(pod: Obj) -> Event:
        node = (pod.get("spec") or {}).get("nodeName")
        note = f"Pod {name_of(pod)} was stuck terminating on lost node {node}; force-deleted it"
        return warning("ForceDeletedStuckPod", DELETE, note)


def stuck_pods(
    terminating: Iterable[Obj],
    *,
    ours: Callable[[Obj], bool],
    nodes: Mapping[str, Obj],
    now: datetime.datetime,
) -> StuckPods:
    """Pods of this LWS's own groups (``ours``: made by its StatefulSets) still terminating
    ``STUCK_AFTER`` past their grace period (deletionTimestamp is when it ends) on a node that
    cannot finish deleting them: their kubelet is gone, so they would block the names their
    group needs forever (upstream #508, compatibility C10). Never any other pod."""
    release, waits = [], []
    for pod in terminating:
        if not ours(pod):
            continue
        deadline = parse_time(deletion_timestamp_of(pod))
        if deadline is None:
            continue
        if now - deadline < STUCK_AFTER:
            waits.append((deadline + STUCK_AFTER - now).total_seconds())
            continue
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name or node_lost(nodes.get(str(node_name))):
            release.append(pod)
    return StuckPods(tuple(release), min(waits) if waits else None)


def node_lost(node: Obj | None) -> bool:
    """A node that is gone, out of service, or not Ready cannot finish deleting its pods."""
    if node is None:
        return True
    taints = (node.get("spec") or {}).get("taints") or []
    if any(t.get("key") == "node.kubernetes.io/out-of-service" for t in taints):
        return True
    conditions = (node.get("status") or {}).get("conditions") or []
    return not any(x.get("type") == "Ready" and x.get("status") == "True" for x in conditions)
