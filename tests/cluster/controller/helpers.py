"""Building LeaderWorkerSets and waiting on what the operator does with them (watches only)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lws_operator.api import constants as c
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_operator.plan.meta import pod_ready
from lws_testbed.wait import Objects, wait_for_objects

TIMEOUT = 90


def container(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": "registry.k8s.io/pause:3.10", **extra}


def lws_body(
    name: str,
    *,
    replicas: int = 2,
    size: int = 3,
    leader: bool = True,
    subdomain: str | None = None,
    startup: str | None = None,
    annotations: dict[str, str] | None = None,
    leader_spec: dict[str, Any] | None = None,
    worker_spec: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    template: dict[str, Any] = {
        "size": size,
        "workerTemplate": {
            "metadata": {"labels": {"role": "worker"}},
            "spec": worker_spec or {"containers": [container("worker")]},
        },
    }
    if leader:
        template["leaderTemplate"] = {
            "metadata": {"labels": {"role": "leader"}},
            "spec": leader_spec or {"containers": [container("leader")]},
        }
    body: dict[str, Any] = {
        "apiVersion": c.API_VERSION,
        "kind": c.KIND,
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": {"replicas": replicas, "leaderWorkerTemplate": template, **spec},
    }
    if subdomain:
        body["spec"]["networkConfig"] = {"subdomainPolicy": subdomain}
    if startup:
        body["spec"]["startupPolicy"] = startup
    return body


def lws_path(ns: str, name: str | None = None, sub: str | None = None) -> str:
    return resource_path(c.API_VERSION, c.PLURAL, namespace=ns, name=name, subresource=sub)


def condition(lws: dict[str, Any], type_: str) -> dict[str, Any] | None:
    for cond in (lws.get("status") or {}).get("conditions") or []:
        if cond.get("type") == type_:
            return dict(cond)
    return None


def is_available(lws: dict[str, Any], ready: int | None = None) -> bool:
    """Available=True for the current generation (and ``ready`` groups, when given)."""
    status = lws.get("status") or {}
    cond = condition(lws, c.CONDITION_AVAILABLE) or {}
    return (
        cond.get("status") == "True"
        and status.get("observedGeneration") == lws["metadata"].get("generation")
        and (ready is None or status.get("readyReplicas", 0) == ready)
    )


async def wait_lws(
    kube: Kube, ns: str, name: str, done: Any, what: str, timeout: float = TIMEOUT
) -> dict[str, Any]:
    objs = await wait_for_objects(
        kube,
        lws_path(ns),
        lambda objs: f"{ns}/{name}" in objs and bool(done(objs[f"{ns}/{name}"])),
        timeout=timeout,
        what=f"LeaderWorkerSet {name}: {what}",
        field_selector=f"metadata.name={name}",
    )
    return objs[f"{ns}/{name}"]


async def create_available(kube: Kube, ns: str, body: dict[str, Any]) -> dict[str, Any]:
    await kube.create(lws_path(ns), body)
    name = body["metadata"]["name"]
    want = body["spec"]["replicas"]
    return await wait_lws(
        kube, ns, name, lambda o: is_available(o, want), f"Available with {want} ready groups"
    )


def short_pods(objs: Objects) -> str:
    rows = []
    for key, p in sorted(objs.items()):
        labels = p["metadata"].get("labels") or {}
        statuses = p.get("status", {}).get("containerStatuses") or []
        rows.append(
            f"- {key} phase={p.get('status', {}).get('phase')} ready={pod_ready(p)} "
            f"group={labels.get(c.GROUP_INDEX_LABEL)} worker={labels.get(c.WORKER_INDEX_LABEL)} "
            f"deleting={bool(p['metadata'].get('deletionTimestamp'))} "
            f"uid={p['metadata'].get('uid', '')[:8]} "
            f"restarts={sum(s.get('restartCount', 0) for s in statuses)}"
        )
    return "\n".join(rows) or "(no pods)"


async def wait_pods(
    kube: Kube,
    ns: str,
    name: str,
    done: Any,
    what: str,
    timeout: float = TIMEOUT,
    summary: Callable[[Objects], str] = short_pods,
) -> Objects:
    return await wait_for_objects(
        kube,
        resource_path("v1", "pods", namespace=ns),
        done,
        timeout=timeout,
        what=f"pods of {name}: {what}",
        label_selector=f"{c.SET_NAME_LABEL}={name}",
        summary=summary,
    )


async def list_of(
    kube: Kube, api: str, plural: str, ns: str, name: str
) -> dict[str, dict[str, Any]]:
    listing = await kube.list(
        resource_path(api, plural, namespace=ns), label_selector=f"{c.SET_NAME_LABEL}={name}"
    )
    return {o["metadata"]["name"]: o for o in listing["items"]}


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env") or []}


def env_names(container: dict[str, Any]) -> list[str]:
    return [e["name"] for e in container.get("env") or []]


async def lws_revisions(kube: Kube, ns: str, name: str) -> dict[str, dict[str, Any]]:
    """The LWS's ControllerRevisions (not its StatefulSets' own, which carry the same label)."""
    return {
        k: r
        for k, r in (await list_of(kube, "apps/v1", "controllerrevisions", ns, name)).items()
        if all(ref.get("kind") == c.KIND for ref in r["metadata"].get("ownerReferences") or [])
    }


async def statefulset_max_unavailable_served(kube: Kube, namespace: str) -> bool:
    """Whether the API server keeps a StatefulSet's ``rollingUpdate.maxUnavailable`` (its
    MaxUnavailableStatefulSet feature gate: off by default before Kubernetes 1.37, on from
    1.37): the StatefulSet controller then replaces several leaders at once."""
    body = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "max-unavailable-probe"},
        "spec": {
            "selector": {"matchLabels": {"probe": "max-unavailable"}},
            "serviceName": "probe",
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}},
            "template": {
                "metadata": {"labels": {"probe": "max-unavailable"}},
                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
            },
        },
    }
    stored = await kube.create(
        resource_path("apps/v1", "statefulsets", namespace=namespace), body, dry_run=True
    )
    return "maxUnavailable" in stored["spec"]["updateStrategy"].get("rollingUpdate", {})
