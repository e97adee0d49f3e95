"""The operator's view of the cluster, keyed by (namespace, LWS name): the kopf index of
LeaderWorkerSets, the informers (``informer.py``) of the objects labelled
``leaderworkerset.sigs.k8s.io/name``, the nodes, and the worker pods seen deleted.

Watches filter by that label on the server, so the operator neither receives nor keeps other
pods. Pods, worker StatefulSets and nodes are kept as projections: subsets of the real objects
with only what the planners read, every field meaning what it means in the API, which bounds
memory with thousands of pods; leader StatefulSets and revisions are kept whole.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from lws_operator.api import constants as c
from lws_operator.controller.runtime.informer import DELETED, Informer, Key
from lws_operator.plan.keys import OwnerKey
from lws_operator.plan.lws.groups import GroupTable, observe_group
from lws_operator.plan.lws.history import MESSAGE_MAX, history_name
from lws_operator.plan.lws.nodehealth import UNHEALTHY_TAINTS, node_state
from lws_operator.plan.lws.observed import Observed
from lws_operator.plan.lws.restart import Lost
from lws_operator.plan.lws.workers import READS_BESIDES_GROUP
from lws_operator.plan.meta import (
    is_deleting,
    labels_of,
    meta_of,
    name_of,
    statefulset_replicas,
    uid_of,
)

# All nodes are kept under this one key.
NODES = OwnerKey("", "")
# The stores of what the groups' worker plans read besides their groups, as plan/lws/workers.py
# declares it. Their events are counted (``Observed.worker_input_events``).
WORKER_INPUT_STORES = frozenset(f"lws_{name}" for name in READS_BESIDES_GROUP)


def _meta(meta: Mapping[str, Any], *, annotations: bool = True) -> dict[str, Any]:
    keep = ("name", "namespace", "uid", "resourceVersion", "generation", "deletionTimestamp")
    out = {k: meta[k] for k in keep if k in meta}
    out["labels"] = dict(meta.get("labels") or {})
    if annotations:
        out["annotations"] = dict(meta.get("annotations") or {})
    out["ownerReferences"] = [dict(r) for r in meta.get("ownerReferences") or []]
    return out


def _tpu_resources(containers: Any) -> list[dict[str, Any]]:
    """The containers with their ``google.com/tpu`` limits and requests only (the leader's
    decide its workers' ``leader-requests-tpus``); others are left out."""
    out = []
    for ctr in containers or []:
        resources = (ctr or {}).get("resources") or {}
        kept = {
            kind: {c.TPU_RESOURCE_NAME: amounts[c.TPU_RESOURCE_NAME]}
            for kind in ("limits", "requests")
            if isinstance(amounts := resources.get(kind), dict) and c.TPU_RESOURCE_NAME in amounts
        }
        if kept:
            out.append({"name": ctr.get("name"), "resources": kept})
    return out


_TERMINATED = ("exitCode", "reason", "signal", "message", "finishedAt")


def _terminated(state: Any) -> dict[str, Any] | None:
    """A terminated state, as evidence of a failure (plan/lws/evidence.py); the message cut."""
    term = (state or {}).get("terminated") if isinstance(state, dict) else None
    if not isinstance(term, dict):
        return None
    out = {k: term[k] for k in _TERMINATED if k in term}
    if "message" in out:
        out["message"] = str(out["message"])[:MESSAGE_MAX]
    return {"terminated": out}


def _restart_counts(statuses: Any) -> list[dict[str, Any]]:
    """Each container's name and restart count, and its terminated states if any."""
    out = []
    for s in statuses or []:
        if not isinstance(s, dict):
            continue
        kept: dict[str, Any] = {"name": s.get("name"), "restartCount": s.get("restartCount", 0)}
        for key in ("state", "lastState"):
            if (term := _terminated(s.get(key))) is not None:
                kept[key] = term
        out.append(kept)
    return out


def project_pod(body: Mapping[str, Any]) -> dict[str, Any]:
    """What the planners read of a pod: identity, labels, owners, placement, its grace period,
    the TPU requests of its containers, readiness, and container and init-container restart
    counts and terminated states (the evidence of a failure)."""
    spec = body.get("spec") or {}
    status = body.get("status") or {}
    out_spec: dict[str, Any] = {"nodeName": spec.get("nodeName")}
    if (grace := spec.get("terminationGracePeriodSeconds")) is not None:
        out_spec["terminationGracePeriodSeconds"] = grace  # a failed group's teardown
    for key in ("containers", "initContainers"):
        if tpus := _tpu_resources(spec.get(key)):
            out_spec[key] = tpus
    out_status = {k: status[k] for k in ("phase", "conditions", "reason") if k in status}
    for key in ("initContainerStatuses", "containerStatuses"):
        if key in status:
            out_status[key] = _restart_counts(status[key])
    return {"metadata": _meta(meta_of(body)), "spec": out_spec, "status": out_status}


def project_statefulset(body: Mapping[str, Any]) -> dict[str, Any]:
    """Leader StatefulSets whole (what the lws field manager applied is compared with what it
    would apply); worker StatefulSets as identity, replicas and rollout status."""
    meta = meta_of(body)
    labels = meta.get("labels") or {}
    if meta.get("name") == labels.get(c.SET_NAME_LABEL):
        return dict(body)
    spec = body.get("spec") or {}
    return {
        "metadata": _meta(meta, annotations=False),
        "spec": {"replicas": spec.get("replicas")},
        "status": dict(body.get("status") or {}),
    }


def project_revision(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """LWS revisions whole; the StatefulSet controller's own revisions (they carry the pod
    template's labels, ours included) are none of our business."""
    for ref in meta_of(body).get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") != c.KIND:
            return None
    return dict(body)


def project_meta(body: Mapping[str, Any]) -> dict[str, Any]:
    return {"metadata": _meta(meta_of(body))}


def project_service(body: Mapping[str, Any]) -> dict[str, Any]:
    """Identity and owners, and whether it publishes not-ready addresses (KEP-820)."""
    spec = body.get("spec") or {}
    return {
        "metadata": _meta(meta_of(body)),
        "spec": {"publishNotReadyAddresses": spec.get("publishNotReadyAddresses")},
    }


def project_node(body: Mapping[str, Any]) -> dict[str, Any]:
    """A node's name and labels (exclusive placement), its health: the unreachable, not-ready
    and out-of-service taints and the Ready condition (lost-node detection and node-health
    reports), and whether it is cordoned (evictions, plan/lws/disruption.py)."""
    meta = meta_of(body)
    spec = body.get("spec") or {}
    taints = [
        {"key": t.get("key"), "effect": t.get("effect")}
        for t in spec.get("taints") or []
        if isinstance(t, dict) and t.get("key") in UNHEALTHY_TAINTS
    ]
    ready = [
        {"type": "Ready", "status": cond.get("status")}
        for cond in (body.get("status") or {}).get("conditions") or []
        if isinstance(cond, dict) and cond.get("type") == "Ready"
    ]
    return {
        "metadata": {"name": meta.get("name"), "labels": dict(meta.get("labels") or {})},
        "spec": {"taints": taints, "unschedulable": bool(spec.get("unschedulable"))},
        "status": {"conditions": ready},
    }


def node_key(_obj: Mapping[str, Any]) -> Key:
    return NODES


_NONE: Mapping[str, dict[str, Any]] = MappingProxyType({})


@dataclass
class _Groups:
    """The groups of one LWS as last observed, and which need observing again: a pod or
    worker StatefulSet event changes its own group only, so a reconcile woken by it observes
    one group, not every pod of the LWS."""

    leader_uid: str | None
    table: GroupTable = field(default_factory=GroupTable)
    stale: dict[int, float] = field(default_factory=dict)
    """The groups to observe again, each with when (monotonic) the first event since its last
    observation arrived."""
    everything: float | None = None
    """Since when every group is to be observed again (an object without a group label
    changed)."""
    observed_at: dict[int, int] = field(default_factory=dict)
    """When each group was last observed anew (an observation number), oldest first: every
    reader (the reconciler, a DisaggregatedSet's rollout, the eviction webhook) observes, and
    each remembers the last number it planned from."""
    changed_at: dict[int, float] = field(default_factory=dict)
    """Per group, when (monotonic) the first event arrived that its latest observation
    follows: what a recovery's reaction is timed from (controller/lws/steps.py)."""


class Cache:
    """Read access to the kopf index of LeaderWorkerSets and to the informers of their objects
    (each kept current from its watch); and the worker pods seen deleted.

    Only observations write it: watch events, and :meth:`observe`. What it keeps of an LWS
    lives while the LWS does: an observation that finds it gone drops it (the events of its
    children's deletions, which may add some back, each wake a reconcile that observes again).
    A deleted worker pod's record lives while its worker StatefulSet does, one per pod name
    (the latest deletion), so a reconcile that has decided on it needs no way to remove it:
    it remembers what it decided (controller/lws/reconcile.py)."""

    def __init__(self) -> None:
        self.indexes: dict[str, Mapping[Key, Iterable[Any]]] = {}
        self.informers: dict[str, list[Informer]] = {}
        self._lost: dict[Key, dict[str, Lost]] = {}
        """Per LWS, the worker pods seen deleted, by pod name."""
        self._observations = itertools.count(1)
        self._groups: dict[Key, _Groups] = {}
        self._terminating: dict[Key, set[str]] = {}
        self._worker_input_events: dict[Key, int] = {}
        """Per LWS, a count of the events of its objects in ``WORKER_INPUT_STORES``."""
        self._node_states: dict[str, str | None] = {}
        self._healthy: frozenset[str] = frozenset()
        """The nodes whose state is healthy (``node_state`` None): what a pass at rest needs
        to know of the nodes, kept from their events instead of judged per pass."""

    def changed(self, store: str, kind: str, key: Key, body: Mapping[str, Any]) -> None:
        """An informer's event: remember a deleted worker pod, keep the terminating pods, and
        forget the observation of the group the object belongs to."""
        if store == "lws_pods":
            name = name_of(body)
            terminating = self._terminating.setdefault(key, set())
            if kind != DELETED and is_deleting(body):
                terminating.add(name)
            else:
                terminating.discard(name)
            if kind == DELETED and (lost := Lost.of(body)) is not None:
                self._lost.setdefault(key, {})[lost.name] = lost
        elif store in WORKER_INPUT_STORES:
            self._worker_input_events[key] = self._worker_input_events.get(key, 0) + 1
            return
        elif store != "lws_statefulsets" or name_of(body) == key[1]:
            return  # a leader StatefulSet's own changes alter no group (its uid is checked)
        elif kind == DELETED:
            self._drop_lost_of(key, uid_of(body))
        index = labels_of(body).get(c.GROUP_INDEX_LABEL, "")
        memo = self._groups.get(key)
        if memo is None:
            return
        now = time.monotonic()
        if index.isdigit():
            memo.stale.setdefault(int(index), now)
        elif memo.everything is None:
            memo.everything = now  # no group label (not through our webhook): observe all

    def node_changed(self, kind: str, node: Mapping[str, Any]) -> list[Key]:
        """The LWSs with a pod on ``node``, when its health changed (plan/lws/nodehealth.py): a
        node going NotReady or unreachable wakes them, so their groups are reported before
        anything happens to the pods. Other node events wake nothing."""
        name = name_of(node)
        known = name in self._node_states
        before = self._node_states.get(name)
        state = "gone" if kind == DELETED else node_state(node)
        if kind == DELETED:
            self._node_states.pop(name, None)
        else:
            self._node_states[name] = state
        if (state is None) != (name in self._healthy):
            self._healthy = self._healthy ^ {name}  # a new set: observations keep theirs
        if (known and before == state) or (not known and state is None):
            return []
        return [
            key
            for informer in self.informers.get("lws_pods", [])
            for key, pods in informer.stores()
            if any((p.get("spec") or {}).get("nodeName") == name for p in pods.values())
        ]

    def _observe_groups(
        self, key: Key, statefulsets: Mapping[str, dict[str, Any]], pods: Mapping[str, Any]
    ) -> tuple[GroupTable, MappingProxyType[int, int]]:
        """The groups, and when each was last observed anew (a live read-only view)."""
        leader_sts = statefulsets.get(key[1])
        leader_uid = uid_of(leader_sts) if leader_sts is not None else None
        memo = self._groups.get(key)
        if memo is None or memo.leader_uid != leader_uid:
            memo = self._groups[key] = _Groups(leader_uid)
        table, count = memo.table, statefulset_replicas(leader_sts)
        table.truncate(count)
        kept = range(len(table))
        since = memo.everything
        again = kept if since is not None else sorted(i for i in memo.stale if i < len(table))
        fresh = [*again, *range(len(table), count)]
        now = time.monotonic()
        first = now if since is None else since
        for i in fresh:
            memo.changed_at[i] = min(memo.stale.get(i, first), first)
        memo.stale.clear()
        memo.everything = None
        for index in fresh:
            table.put(
                observe_group(
                    index,
                    lws_name=key[1],
                    leader_sts_uid=leader_uid,
                    pods=pods,
                    statefulsets=statefulsets,
                )
            )
        observed_at = memo.observed_at
        for index in [i for i in observed_at if i >= count] if len(observed_at) > count else ():
            del observed_at[index]
            memo.changed_at.pop(index, None)
        for index in fresh:  # to the end: the newest observation last
            observed_at.pop(index, None)
            observed_at[index] = next(self._observations)
        return table, MappingProxyType(observed_at)

    def _drop_lost_of(self, key: Key, worker_sts_uid: str) -> None:
        """A worker StatefulSet is gone: its incarnation's deleted pods need no decision."""
        if (records := self._lost.get(key)) is None:
            return
        for name in [n for n, r in records.items() if r.owner_uid == worker_sts_uid]:
            del records[name]
        if not records:
            del self._lost[key]

    def _drop(self, key: Key) -> None:
        """Drop what is kept of an LWS that is gone."""
        self._lost.pop(key, None)
        self._groups.pop(key, None)
        self._terminating.pop(key, None)
        self._worker_input_events.pop(key, None)

    def bind(self, indexes: Mapping[str, Any]) -> None:
        self.indexes = dict(indexes)

    def add_informer(self, name: str, informer: Informer) -> None:
        self.informers.setdefault(name, []).append(informer)

    async def wait_synced(self) -> None:
        """Until every informer has listed once: before that, a missing object may only be
        not listed yet, and planning would create it again."""
        for informer in (i for group in self.informers.values() for i in group):
            await informer.synced.wait()

    def synced(self) -> bool:
        return all(i.synced.is_set() for group in self.informers.values() for i in group)

    def _get(self, name: str, key: Key) -> Mapping[str, dict[str, Any]]:
        """The objects kept for ``key``: a live read-only view (no copy per reconcile)."""
        informers = self.informers.get(name, [])
        if len(informers) == 1:
            return informers[0].get(key)
        merged: dict[str, dict[str, Any]] = {}  # one informer per namespace served
        for informer in informers:
            merged.update(informer.get(key))
        return merged

    def nodes(self) -> Mapping[str, dict[str, Any]]:
        """The nodes, by name: a live read-only view (planners look nodes up by name)."""
        informers = self.informers.get("nodes", [])
        return informers[0].get(NODES) if informers else _NONE

    def observe(self, key: Key) -> Observed:
        """Everything known of the LWS; of one that is gone, only that."""
        found = list(self.indexes.get("lws_objects", {}).get(key, ()))
        if not found:
            self._drop(key)
            return Observed(lws=None)
        lws = dict(found[0])
        statefulsets = self._get("lws_statefulsets", key)
        pods = self._get("lws_pods", key)
        groups, observed_at = self._observe_groups(key, statefulsets, pods)
        changed_at = MappingProxyType(self._groups[key].changed_at)
        return Observed(
            lws=lws,
            statefulsets=statefulsets,
            pods=pods,
            services=self._get("lws_services", key),
            revisions=self._get("lws_revisions", key),
            podgroups=self._get("lws_podgroups", key),
            nodes=self.nodes(),
            healthy_nodes=self._healthy,
            lost=tuple(self._lost.get(key, {}).values()),
            groups=groups,
            observed_at=observed_at,
            changed_at=changed_at,
            worker_input_events=self._worker_input_events.get(key, 0),
            terminating=tuple(
                pods[name] for name in self._terminating.get(key, ()) if name in pods
            ),
            history=self._get("lws_history", key).get(history_name(key[1])),
        )

    def keys(self) -> list[Key]:
        return list(self.indexes.get("lws_objects", {}).keys())
