"""The operator's view of the cluster, keyed by (namespace, LWS name): the kopf index of
LeaderWorkerSets, and informers (``informer.py``) of the objects labelled
``leaderworkerset.sigs.k8s.io/name``.

Watches filter by that label on the server, so the operator neither receives nor keeps other
pods. Pods and worker StatefulSets are kept as small projections (what the planner reads), which
bounds memory with thousands of pods; the leader StatefulSet and revisions are kept whole.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lws_operator.api import constants as c
from lws_operator.controller.informer import Informer, Key

_POD_STATUS_KEYS = ("phase", "conditions")
_TPU = c.TPU_RESOURCE_NAME


def _meta(meta: Mapping[str, Any], *, annotations: bool = True) -> dict[str, Any]:
    keep = ("name", "namespace", "uid", "resourceVersion", "generation", "deletionTimestamp")
    out = {k: meta[k] for k in keep if k in meta}
    out["labels"] = dict(meta.get("labels") or {})
    if annotations:
        out["annotations"] = dict(meta.get("annotations") or {})
    out["ownerReferences"] = [dict(r) for r in meta.get("ownerReferences") or []]
    return out


def _requests_tpus(spec: Mapping[str, Any]) -> bool:
    for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        resources = container.get("resources") or {}
        limit = (resources.get("limits") or {}).get(_TPU)
        request = (resources.get("requests") or {}).get(_TPU)
        if str(limit if limit is not None else request or "0") not in ("0", ""):
            return True
    return False


def project_pod(body: Mapping[str, Any]) -> dict[str, Any]:
    """What the planner needs of a pod: identity, labels, owners, placement, readiness and
    container restart counts."""
    spec = body.get("spec") or {}
    status = body.get("status") or {}
    restarts = [
        {"name": s.get("name"), "restartCount": s.get("restartCount", 0)}
        for key in ("initContainerStatuses", "containerStatuses")
        for s in status.get(key) or []
        if isinstance(s, dict)
    ]
    return {
        "metadata": _meta(body.get("metadata") or {}),
        "spec": {"nodeName": spec.get("nodeName"), "requestsTpus": _requests_tpus(spec)},
        "status": {
            **{k: status[k] for k in _POD_STATUS_KEYS if k in status},
            "containerStatuses": restarts,
        },
    }


def project_statefulset(body: Mapping[str, Any]) -> dict[str, Any]:
    """Leader StatefulSets whole (their spec is compared with what we would apply); worker
    StatefulSets as identity, replicas and rollout status."""
    meta = body.get("metadata") or {}
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
    for ref in (body.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") != c.KIND:
            return None
    return dict(body)


def project_meta(body: Mapping[str, Any]) -> dict[str, Any]:
    return {"metadata": _meta(body.get("metadata") or {})}


@dataclass
class Observed:
    """Everything the operator knows about one LeaderWorkerSet, by object name."""

    lws: dict[str, Any] | None
    statefulsets: dict[str, dict[str, Any]] = field(default_factory=dict)
    pods: dict[str, dict[str, Any]] = field(default_factory=dict)
    services: dict[str, dict[str, Any]] = field(default_factory=dict)
    revisions: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Gang PodGroups (metadata only); watched only with a gang provider.
    podgroups: dict[str, dict[str, Any]] = field(default_factory=dict)


def _by_name(objs: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    return {str(o["metadata"]["name"]): dict(o) for o in objs}


# How long a pod deletion is remembered: enough for its group to be recreated.
LOST_POD_MEMORY = 600.0


class Cache:
    """Read access to the kopf index of LeaderWorkerSets and to the informers of their objects
    (each kept current from its watch), plus the pods seen deleted recently: a pod deleted
    without first being seen terminating (force deletion) has left no other trace."""

    def __init__(self) -> None:
        self.indexes: dict[str, Mapping[Key, Iterable[Any]]] = {}
        self.informers: dict[str, list[Informer]] = {}
        self._lost: dict[Key, dict[str, tuple[str, float]]] = {}

    def pod_deleted(self, key: Key, body: Mapping[str, Any]) -> None:
        meta = body.get("metadata") or {}
        owner = next(
            (r.get("uid") for r in meta.get("ownerReferences") or [] if r.get("controller")), None
        )
        if owner:
            self._lost.setdefault(key, {})[str(meta.get("name"))] = (str(owner), time.monotonic())

    def forget(self, key: Key) -> None:
        """Drop what is remembered of an LWS that is gone."""
        self._lost.pop(key, None)

    def lost_pods(self, key: Key) -> list[tuple[str, str]]:
        """(name, controller owner uid) of this LWS's pods deleted in the last minutes."""
        pods = self._lost.get(key, {})
        horizon = time.monotonic() - LOST_POD_MEMORY
        for name in [n for n, (_, at) in pods.items() if at < horizon]:
            del pods[name]
        if not pods:
            self._lost.pop(key, None)
        return [(name, owner) for name, (owner, _) in pods.items()]

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

    def _get(self, name: str, key: Key) -> list[Any]:
        if name in self.informers:
            return [o for i in self.informers[name] for o in i.get(key)]
        return list(self.indexes.get(name, {}).get(key, ()))

    def observe(self, key: Key) -> Observed:
        lws = self._get("lws_objects", key)
        return Observed(
            lws=dict(lws[0]) if lws else None,
            statefulsets=_by_name(self._get("lws_statefulsets", key)),
            pods=_by_name(self._get("lws_pods", key)),
            services=_by_name(self._get("lws_services", key)),
            revisions=_by_name(self._get("lws_revisions", key)),
            podgroups=_by_name(self._get("lws_podgroups", key)),
        )

    def keys(self) -> list[Key]:
        return list(self.indexes.get("lws_objects", {}).keys())
