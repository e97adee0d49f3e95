"""A DisaggregatedSet's children as upstream makes them: names, labels and bodies of the
child LeaderWorkerSets, their private Services and the role scalers, the placement affinity
injected into the child pod templates, and how the planners see an existing child.

Names (upstream's pkg/utils/disaggregatedset/utils.go and
pkg/controllers/disaggregatedset/service_manager.go): LeaderWorkerSet
``<ds>-<slice>-<revision>-<role>`` (before slices existed, upstream v0.9.0 named it
``<ds>-<revision>-<role>`` with no slice label: such a legacy child is slice 0), Service
``<lws>-prv``, scaler ``<ds>-<role>``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lws_operator.api import constants as lc
from lws_operator.api import ds_constants as c
from lws_operator.api.ds_models import DisaggregatedSet, PlacementPolicy, PlacementType
from lws_operator.plan.meta import (
    annotations_of,
    creation_timestamp_of,
    is_controlled_by,
    is_deleting,
    labels_of,
    meta_of,
    name_of,
    uid_of,
)

Obj = Mapping[str, Any]


def lws_name(ds: str, slice_index: int, revision: str, role: str) -> str:
    return f"{ds}-{slice_index}-{revision}-{role}"


def legacy_lws_name(ds: str, revision: str, role: str) -> str:
    """The name upstream v0.9.0 gave (no slice segment); such a child is slice 0."""
    return f"{ds}-{revision}-{role}"


def service_name(lws: str) -> str:
    return lws + c.SERVICE_SUFFIX


def scaler_name(ds: str, role: str) -> str:
    return f"{ds}-{role}"


def child_labels(ds: str, slice_index: int, revision: str, role: str) -> dict[str, str]:
    """The labels of a child LeaderWorkerSet, also set on its pod templates."""
    return {
        c.APP_LABEL: f"{ds}-{slice_index}-{role}",
        c.ROLE_LABEL: role,
        c.SLICE_LABEL: str(slice_index),
        c.SET_NAME_LABEL: ds,
        c.REVISION_LABEL: revision,
    }


def _ds_ref(ds: DisaggregatedSet, *, block: bool) -> dict[str, Any]:
    """Upstream's owner reference: controller, and blockOwnerDeletion only on scalers."""
    ref: dict[str, Any] = {
        "apiVersion": c.API_VERSION,
        "kind": c.KIND,
        "name": ds.name,
        "uid": ds.uid,
        "controller": True,
    }
    if block:
        ref["blockOwnerDeletion"] = True
    return ref


# --- children as the planners see them ----------------------------------------------------


@dataclass(frozen=True)
class Child:
    """A child LeaderWorkerSet (its projection in the cache, plan/ds/reconcile.py's input)."""

    name: str
    uid: str
    role: str
    slice: int | None
    """None: no slice label (created before slices existed), which counts as slice 0."""
    revision: str
    replicas: int
    """spec.replicas (1 when unset, as the LWS API defaults it)."""
    initial: int | None
    """The initial-replicas annotation, when there is a valid one."""
    status_replicas: int
    ready: int
    updated: int
    created: str
    deleting: bool

    @property
    def slice_index(self) -> int:
        return 0 if self.slice is None else self.slice

    @property
    def baseline(self) -> int:
        """The replicas it had when the rollout that is draining it started."""
        return self.replicas if self.initial is None else self.initial


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        return int(value)
    return None


def child_of(obj: Obj, ds_uid: str) -> Child | None:
    """How the planners see an LWS carrying the DisaggregatedSet's name label; None when it
    is not its child (another controller, or a predecessor of the same name: never touched)
    or has no role or revision label."""
    if not is_controlled_by(obj, ds_uid):
        return None
    labels = labels_of(obj)
    role, revision = labels.get(c.ROLE_LABEL), labels.get(c.REVISION_LABEL)
    if not role or revision is None:
        return None
    raw_slice = labels.get(c.SLICE_LABEL)
    slice_index = _int(raw_slice) if raw_slice else None
    if raw_slice and (slice_index is None or slice_index < 0):
        return None  # an unreadable slice label belongs to no slice we manage
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    replicas = _int(spec.get("replicas"))
    initial = _int(annotations_of(obj).get(c.INITIAL_REPLICAS_ANNOTATION))
    return Child(
        name=name_of(obj),
        uid=uid_of(obj),
        role=role,
        slice=slice_index,
        revision=revision,
        replicas=1 if replicas is None else replicas,
        initial=initial,
        status_replicas=_int(status.get("replicas")) or 0,
        ready=_int(status.get("readyReplicas")) or 0,
        updated=_int(status.get("updatedReplicas")) or 0,
        created=creation_timestamp_of(obj),
        deleting=is_deleting(obj),
    )


# --- placement ----------------------------------------------------------------------------


def _term(expressions: list[dict[str, Any]], topology: str) -> dict[str, Any]:
    return {"labelSelector": {"matchExpressions": expressions}, "topologyKey": topology}


def _expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def placement_terms(
    ds: str, slice_index: int, policy: PlacementPolicy | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The required pod affinity and anti-affinity terms of a slice's pods (upstream's
    ``SetPlacementAffinities``): co-locate the slice's roles in one domain; keep this set's
    other slices out of it (a pod without slice label, from before slices, is slice 0); with
    ExclusiveTopology keep every other DisaggregatedSet's slices out too."""
    if policy is None or policy.type == PlacementType.NONE or not policy.topology:
        return [], []
    key, sid = policy.topology, str(slice_index)
    affinity = [_term([_expr(c.SET_NAME_LABEL, "In", ds), _expr(c.SLICE_LABEL, "In", sid)], key)]
    spread = [_expr(c.SET_NAME_LABEL, "In", ds)]
    if slice_index == 0:
        spread.append(_expr(c.SLICE_LABEL, "Exists"))
    spread.append(_expr(c.SLICE_LABEL, "NotIn", sid))
    anti = [_term(spread, key)]
    if policy.type == PlacementType.EXCLUSIVE_TOPOLOGY:
        others = [
            _expr(c.SET_NAME_LABEL, "Exists"),
            _expr(c.SET_NAME_LABEL, "NotIn", ds),
            _expr(c.SLICE_LABEL, "Exists"),
        ]
        anti.append(_term(others, key))
    return affinity, anti


def _with_placement(pod_spec: dict[str, Any], terms: tuple[list[Any], list[Any]]) -> None:
    affinity_terms, anti_terms = terms
    if not affinity_terms and not anti_terms:
        return
    affinity = pod_spec.setdefault("affinity", {}) or {}
    pod_spec["affinity"] = affinity
    for kind, add in (("podAffinity", affinity_terms), ("podAntiAffinity", anti_terms)):
        section = affinity.setdefault(kind, {}) or {}
        affinity[kind] = section
        required = section.get("requiredDuringSchedulingIgnoredDuringExecution") or []
        section["requiredDuringSchedulingIgnoredDuringExecution"] = [*required, *add]


# --- bodies -------------------------------------------------------------------------------


def _template(template: Any, labels: Mapping[str, str], terms: Any) -> dict[str, Any]:
    out = copy.deepcopy(dict(template or {}))
    meta = dict(out.get("metadata") or {})
    meta["labels"] = {**(meta.get("labels") or {}), **labels}
    if meta.get("annotations") is not None and not meta["annotations"]:
        del meta["annotations"]
    out["metadata"] = meta
    spec = out.setdefault("spec", {})
    _with_placement(spec, terms)
    return out


def lws_body(
    ds: DisaggregatedSet,
    role: Mapping[str, Any],
    *,
    slice_index: int,
    revision: str,
    replicas: int,
) -> dict[str, Any]:
    """A child LeaderWorkerSet (upstream's ``LeaderWorkerSetManager.Create``): the role's LWS
    spec as stored in the DisaggregatedSet with ``replicas``; the role's metadata labels and
    annotations, under the set's own labels, also merged into the pod templates' labels; the
    placement affinity in the pod templates. ``role`` is the role as stored (a plain dict)."""
    name = str(role["name"])
    labels = child_labels(ds.name, slice_index, revision, name)
    spec = copy.deepcopy(dict(role.get("spec") or {}))
    spec["replicas"] = replicas
    lwt = dict(spec.get("leaderWorkerTemplate") or {})
    terms = placement_terms(ds.name, slice_index, ds.spec.placement_policy)
    lwt["workerTemplate"] = _template(lwt.get("workerTemplate"), labels, terms)
    if lwt.get("leaderTemplate") is not None:
        lwt["leaderTemplate"] = _template(lwt["leaderTemplate"], labels, terms)
    spec["leaderWorkerTemplate"] = lwt
    role_meta = meta_of(role)
    metadata: dict[str, Any] = {
        "name": lws_name(ds.name, slice_index, revision, name),
        "namespace": ds.namespace,
        "labels": {**(role_meta.get("labels") or {}), **labels},
        "ownerReferences": [_ds_ref(ds, block=False)],
    }
    if role_meta.get("annotations"):
        metadata["annotations"] = dict(role_meta["annotations"])
    return {"apiVersion": lc.API_VERSION, "kind": lc.KIND, "metadata": metadata, "spec": spec}


def service_body(ds: DisaggregatedSet, child: Child) -> dict[str, Any]:
    """The private headless Service of a child (upstream's ``buildService``): portless,
    selecting the child's pods by the set's labels (slice too, unless a legacy child)."""
    selector = {
        c.SET_NAME_LABEL: ds.name,
        c.ROLE_LABEL: child.role,
        c.REVISION_LABEL: child.revision,
    }
    if child.slice is not None:
        selector[c.SLICE_LABEL] = str(child.slice)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": service_name(child.name),
            "namespace": ds.namespace,
            "labels": dict(selector),
            "ownerReferences": [_ds_ref(ds, block=False)],
        },
        "spec": {"clusterIP": "None", "selector": selector},
    }


def scaler_body(ds: DisaggregatedSet, role: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.SCALER_KIND,
        "metadata": {
            "name": scaler_name(ds.name, role),
            "namespace": ds.namespace,
            "labels": {c.SET_NAME_LABEL: ds.name, c.ROLE_LABEL: role},
            "ownerReferences": [_ds_ref(ds, block=True)],
        },
        "spec": {"replicas": replicas},
    }


def scaler_selector(ds: str, role: str) -> str:
    """The leader pods of a role (one per group), over its slices and revisions."""
    return f"{c.SET_NAME_LABEL}={ds},{c.ROLE_LABEL}={role},{lc.WORKER_INDEX_LABEL}=0"
