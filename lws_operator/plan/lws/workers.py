"""What one group needs next on the workers' side, once its leader pod exists (upstream's
PodReconciler.Reconcile, pkg/controllers/pod_controller.go): its Service (``UniquePerReplica``), its
PodGroup (gang scheduling), and its worker StatefulSet, built from the revision the leader carries,
created when the startup policy and placement allow, after a previous incarnation's is out of the
way.

Pure: the caller creates or deletes what :func:`plan_workers` returns, in this order: Service,
PodGroup (nothing after it when that fails), stale StatefulSet, worker StatefulSet.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from lws_operator.api import constants as c
from lws_operator.api.models import LeaderWorkerSet, LeaderWorkerSetSpec, StartupPolicy
from lws_operator.api.models import SubdomainPolicy as Subdomain
from lws_operator.plan.events import (
    CREATE,
    FAILED_CREATE,
    GROUPS_PROGRESSING,
    Event,
    normal,
    warning,
)
from lws_operator.plan.lws import gang, names, tpu
from lws_operator.plan.lws import statefulsets as sts_plan
from lws_operator.plan.lws.groups import Group, Obj
from lws_operator.plan.lws.podview import PodMutationError
from lws_operator.plan.lws.services import publish_not_ready, replica_service
from lws_operator.plan.meta import (
    controller_of,
    is_controlled_by,
    is_deleting,
    labels_of,
    name_of,
    pod_ready,
)

# How soon to look again at what no watch tells us about.
REVISION_PENDING_RETRY = 1.0  # its revision is being written
FOREIGN_RETRY = 15.0  # someone else's object may go away unannounced
NODE_RETRY = 30.0  # a node may gain its topology label


@dataclass(frozen=True)
class WorkerPlan:
    service: dict[str, Any] | None = None
    """The group's headless Service to create (``UniquePerReplica``)."""
    pod_group: dict[str, Any] | None = None
    """The group's PodGroup to create before anything below."""
    delete_stale: Obj | None = None
    """A previous incarnation's worker StatefulSet to delete (it has the name we need)."""
    workers: dict[str, Any] | None = None
    """The worker StatefulSet to create."""
    events: tuple[Event, ...] = ()
    """Warnings about what blocks the group."""
    retry: float | None = None
    """Look again after this many seconds (something no watch reports)."""

    @property
    def acts(self) -> bool:
        """Whether there is anything to create, delete or report."""
        return self is not NOTHING and (  # NOTHING first: most groups on most passes
            bool(self.events)
            or self.service is not None
            or self.pod_group is not None
            or self.delete_stale is not None
            or self.workers is not None
        )

    @property
    def created(self) -> Event:
        return normal(
            GROUPS_PROGRESSING, CREATE, f"Created worker statefulset for leader pod {self._leader}"
        )

    @property
    def failed(self) -> Event:
        """FailedCreate for the worker StatefulSet (the caller appends the server's answer)."""
        return warning(
            FAILED_CREATE,
            CREATE,
            f"Failed to create worker statefulset for leader pod {self._leader}",
        )

    @property
    def _leader(self) -> str:
        return str((self.workers or {}).get("metadata", {}).get("name", ""))


NOTHING = WorkerPlan()
"""The plan of a group that needs nothing (most groups on most passes: one object)."""


def foreign_workers(leader_name: str) -> Event:
    """A StatefulSet named like the group's workers that no leader pod owns blocks the group."""
    return warning(
        FAILED_CREATE,
        CREATE,
        f"StatefulSet {leader_name} exists and is not owned by leader pod {leader_name}; "
        "delete or rename it",
    )


def is_foreign_workers(sts: Obj | None) -> bool:
    """Whether a StatefulSet that exists under a group's workers' name is someone else's."""
    owner = controller_of(sts) if sts is not None else None
    return sts is not None and (owner is None or owner.get("kind") != "Pod")


# What plan_workers reads besides its group and the LWS (``worker_inputs``), by the name of the
# observed mapping: a change to any of these plans every group's workers again. The cache counts
# their events from this declaration (controller/lws/cache.py). Nodes are left out on purpose:
# a node's change that matters wakes its groups' pods or a timer (NODE_RETRY).
READS_BESIDES_GROUP = ("services", "revisions", "podgroups")


def worker_inputs(lws: LeaderWorkerSet, read_events: int) -> tuple[Any, ...]:
    """What every group's worker plan reads besides its group: the LWS's spec (its uid and
    generation), labels and annotations, and the objects of ``READS_BESIDES_GROUP`` (the count
    of their events)."""
    meta = lws.metadata
    return (
        meta.get("uid"),
        meta.get("generation"),
        tuple(sorted(lws.annotations.items())),
        tuple(sorted((meta.get("labels") or {}).items())),
        read_events,
    )


@dataclass
class WorkersDue:
    """Incremental planning of the groups' workers, the memory of one LWS: a pod event then
    plans one group's workers, not every group's. A group is due when it was observed anew,
    while its last plan was not NOTHING (waiting, retrying, acting), and every group is when
    ``worker_inputs`` changed. Lives as long as the reconciler remembers the LWS."""

    inputs: tuple[Any, ...] | None = None
    """``worker_inputs`` when every group was last made due."""
    due: set[int] = field(default_factory=set)
    taken: int = 0
    """The last group observation (its number) made due."""

    def take(self, observed_at: MappingProxyType[int, int]) -> list[int]:
        """Make due the groups observed anew since the last take (``observed_at``: when each
        group was last observed, oldest first, so only the new ones are read), and return
        them. First of a pass: a pass cut short loses none."""
        newest, anew = self.taken, []
        for index in reversed(observed_at):
            if (at := observed_at[index]) <= self.taken:
                break
            anew.append(index)
            newest = max(newest, at)
        self.due.update(anew)
        self.taken = newest
        return anew

    def now_due(self, inputs: tuple[Any, ...], count: int) -> set[int]:
        """The groups to plan this pass, of ``count``."""
        if self.inputs != inputs:
            self.inputs = inputs
            self.due = set(range(count))
        elif any(i >= count for i in self.due):
            self.due = {i for i in self.due if i < count}
        return self.due

    def planned(self, index: int, plan: WorkerPlan) -> None:
        """A plan of NOTHING: not due until its group, or ``worker_inputs``, changes."""
        if plan is NOTHING:
            self.due.discard(index)


def plan_workers(
    lws: LeaderWorkerSet,
    group: Group,
    *,
    spec: LeaderWorkerSetSpec | None,
    services: Mapping[str, Obj],
    statefulsets: Mapping[str, Obj],
    podgroups: Mapping[str, Obj],
    nodes: Mapping[str, Obj],
    gang_api: gang.GangApi | None,
) -> WorkerPlan:
    """``spec`` is the LWS spec at the revision the leader carries (None while that revision
    is not observed yet)."""
    if not group.leader_live:
        return NOTHING
    if spec is None:
        return WorkerPlan(retry=REVISION_PENDING_RETRY)
    leader = dict(group.leader or {})
    leader_name = name_of(leader)
    service = None
    if (
        spec.network_config.subdomain_policy == Subdomain.UNIQUE_PER_REPLICA
        and leader_name not in services
    ):
        service = replica_service(lws.name, leader, publish_not_ready(lws.spec.network_config))
    pod_group = None
    if gang_api is not None and gang.pod_group_name(lws.name, leader) not in podgroups:
        try:
            pod_group = gang.pod_group(gang_api, lws, spec, leader)
        except ValueError as e:  # a quantity the API server would not have accepted
            note = f"PodGroup {gang.pod_group_name(lws.name, leader)}: {e}"
            return WorkerPlan(service, events=(warning(FAILED_CREATE, CREATE, note),))
    if spec.leader_worker_template.size == 1 or group.workers is not None:
        return NOTHING if service is None and pod_group is None else WorkerPlan(service, pod_group)
    stale = statefulsets.get(names.worker_statefulset_name(leader_name))
    if stale is not None and is_controlled_by(stale, str(leader["metadata"].get("uid", ""))):
        return WorkerPlan(service, pod_group)  # this leader's, not observed as its group yet
    if stale is not None:
        # The previous leader's, whose garbage collection is pending: delete it now, so the
        # new leader's workers need not wait (its deletion wakes us again).
        if is_foreign_workers(stale):
            return WorkerPlan(
                service, pod_group, events=(foreign_workers(leader_name),), retry=FOREIGN_RETRY
            )
        return WorkerPlan(service, pod_group, delete_stale=None if is_deleting(stale) else stale)
    if lws.spec.startup_policy == StartupPolicy.LEADER_READY and not pod_ready(leader):
        return WorkerPlan(service, pod_group)  # the leader's readiness change wakes us
    topology = lws.annotations.get(c.EXCLUSIVE_KEY_ANNOTATION)
    node_name = (leader.get("spec") or {}).get("nodeName")
    # Under a gang the leader waits for its workers: they follow it by affinity instead.
    follow = bool(gang_api and topology and not node_name)
    node_selector: dict[str, str] = {}
    if topology and not follow:
        if not node_name:
            return WorkerPlan(service, pod_group)  # the leader's scheduling wakes us
        node = nodes.get(str(node_name))
        value = labels_of(node).get(topology) if node is not None else None
        if value is None:
            note = f"node {node_name} of leader pod {leader_name} " + (
                "does not exist" if node is None else f"has no topology label {topology}"
            )
            event = warning(FAILED_CREATE, CREATE, note)
            return WorkerPlan(service, pod_group, events=(event,), retry=NODE_RETRY)
        node_selector = {topology: value}
    body = sts_plan.worker_statefulset(
        lws,
        spec,
        leader=leader,
        node_selector=node_selector,
        leader_requests_tpus=_requests_tpus(leader),
    )
    if follow and topology:
        gang.follow_leader(body, leader, topology)
    return WorkerPlan(service, pod_group, workers=body)


def _requests_tpus(leader: Obj) -> bool:
    try:
        return tpu.pod_requests_tpus(dict(leader))
    except PodMutationError:  # the API server validated it; a malformed copy asks for none
        return False
