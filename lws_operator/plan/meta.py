"""Reading and writing the parts every Kubernetes object shares: labels, annotations, deletion,
owner references; and the few status facts read from pods and StatefulSets everywhere.

Objects are plain dicts as the API server sends them; any field may be missing or null."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def meta_of(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """``metadata`` as it is (not a copy), or an empty mapping when the object, its metadata or
    both are missing or null."""
    meta = (obj or {}).get("metadata")
    return meta if isinstance(meta, dict) else {}


def labels_of(obj: Mapping[str, Any] | None) -> dict[str, str]:
    labels = meta_of(obj).get("labels")
    return labels if isinstance(labels, dict) else {}


def annotations_of(obj: Mapping[str, Any] | None) -> dict[str, str]:
    annotations = meta_of(obj).get("annotations")
    return annotations if isinstance(annotations, dict) else {}


def uid_of(obj: Mapping[str, Any] | None) -> str:
    return str(meta_of(obj).get("uid") or "")


def name_of(obj: Mapping[str, Any] | None) -> str:
    return str(meta_of(obj).get("name") or "")


def namespace_of(obj: Mapping[str, Any] | None) -> str:
    return str(meta_of(obj).get("namespace") or "")


def resource_version_of(obj: Mapping[str, Any] | None) -> str:
    """``metadata.resourceVersion``, "" when unset."""
    return str(meta_of(obj).get("resourceVersion") or "")


def generation_of(obj: Mapping[str, Any] | None) -> int:
    """``metadata.generation``, 0 when unset."""
    return int(meta_of(obj).get("generation") or 0)


def creation_timestamp_of(obj: Mapping[str, Any] | None) -> str:
    """``metadata.creationTimestamp`` as written (RFC 3339), "" when unset."""
    return str(meta_of(obj).get("creationTimestamp") or "")


def deletion_timestamp_of(obj: Mapping[str, Any] | None) -> str:
    """``metadata.deletionTimestamp`` as written (RFC 3339), "" when the object is not being
    deleted."""
    return str(meta_of(obj).get("deletionTimestamp") or "")


def is_deleting(obj: Mapping[str, Any]) -> bool:
    return bool(deletion_timestamp_of(obj))


def controller_ref(api_version: str, kind: str, name: str, uid: str) -> dict[str, Any]:
    """A controller owner reference: the garbage collector deletes the object with its owner,
    and (blockOwnerDeletion) a foreground delete of the owner waits for it."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def controller_of(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The controller owner reference of ``obj``, if any."""
    for ref in meta_of(obj).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller"):
            return ref
    return None


def is_controlled_by(obj: Mapping[str, Any], uid: str) -> bool:
    ref = controller_of(obj)
    return ref is not None and ref.get("uid") == uid


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


def statefulset_replicas(sts: Mapping[str, Any] | None) -> int:
    return int(((sts or {}).get("spec") or {}).get("replicas") or 0)


def statefulset_partition(sts: Mapping[str, Any] | None) -> int:
    """``spec.updateStrategy.rollingUpdate.partition`` (0 when unset)."""
    strategy = ((sts or {}).get("spec") or {}).get("updateStrategy") or {}
    return int((strategy.get("rollingUpdate") or {}).get("partition") or 0)


def spec_identity(obj: Mapping[str, Any] | None) -> tuple[Any, ...]:
    """What a plan made from the object's spec and metadata depends on, without what its
    status updates change: the resourceVersion, the status managers' managedFields (the
    StatefulSet controller's readyReplicas, our own LWS status writes). The generation stands
    for the spec."""
    meta = meta_of(obj)
    return (
        meta.get("uid"),
        meta.get("generation"),
        meta.get("labels"),
        meta.get("annotations"),
        meta.get("ownerReferences"),
        [f for f in meta.get("managedFields") or [] if f.get("subresource") != "status"],
    )
