"""Builders for the pods the tests feed to the pod mutation (plain dicts, as the API sends)."""

from __future__ import annotations

from typing import Any

from lws_operator.api import constants as c

NAMESPACE = "ns-1"


def container(name: str = "c", *, tpus: str | None = None, env: Any = None) -> dict[str, Any]:
    ctr: dict[str, Any] = {"name": name, "image": "busybox"}
    if tpus is not None:
        ctr["resources"] = {"limits": {c.TPU_RESOURCE_NAME: tpus}}
    if env is not None:
        ctr["env"] = env
    return ctr


def pod(
    name: str,
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    containers: list[dict[str, Any]] | None = None,
    init_containers: list[dict[str, Any]] | None = None,
    subdomain: str | None = "default",
    namespace: str = NAMESPACE,
    lws: str | None = "test-sample",
) -> dict[str, Any]:
    """A pod named ``name``; ``lws`` sets the name label (None: not an LWS pod)."""
    all_labels = {} if lws is None else {c.SET_NAME_LABEL: lws}
    all_labels.update(labels or {})
    spec: dict[str, Any] = {"containers": containers if containers is not None else [container()]}
    if init_containers is not None:
        spec["initContainers"] = init_containers
    if subdomain is not None:
        spec["subdomain"] = subdomain
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "labels": all_labels}
    if annotations is not None:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def leader(
    name: str, size: int, *, annotations: dict[str, str] | None = None, **kw: Any
) -> dict[str, Any]:
    """A leader pod as the leader StatefulSet creates it (before the webhook)."""
    labels = {c.WORKER_INDEX_LABEL: "0", c.REVISION_KEY: "rev1", **kw.pop("labels", {})}
    return pod(
        name, labels=labels, annotations={c.SIZE_ANNOTATION: str(size), **(annotations or {})}, **kw
    )


def worker(
    name: str,
    size: int,
    group_index: int,
    *,
    annotations: dict[str, str] | None = None,
    **kw: Any,
) -> dict[str, Any]:
    """A worker pod as its worker StatefulSet creates it (before the webhook)."""
    labels = {c.GROUP_INDEX_LABEL: str(group_index), c.REVISION_KEY: "rev1", **kw.pop("labels", {})}
    leader_name = name.rsplit("-", 1)[0]
    base = {c.SIZE_ANNOTATION: str(size), c.LEADER_POD_NAME_ANNOTATION: leader_name}
    return pod(name, labels=labels, annotations={**base, **(annotations or {})}, **kw)


def env_of(ctr: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in ctr.get("env") or []}


def env_names(ctr: dict[str, Any]) -> list[str]:
    return [e["name"] for e in ctr.get("env") or []]


def labels_of(p: dict[str, Any]) -> dict[str, str]:
    labels: dict[str, str] = p["metadata"].get("labels") or {}
    return labels


def required_terms(p: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    affinity = p["spec"].get("affinity") or {}
    terms: list[dict[str, Any]] = (affinity.get(kind) or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or []
    return terms
