"""Building DisaggregatedSets and waiting on what the operator does with them (watches only)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lws_operator.api import constants as lc
from lws_operator.api import ds_constants as c
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_operator.plan.meta import labels_of
from lws_testbed.simulate import retry_conflicts
from lws_testbed.wait import Objects, wait_for_objects
from tests.cluster.controller.helpers import container

TIMEOUT = 120


def role(
    name: str,
    replicas: int = 1,
    *,
    size: int = 1,
    image: str = "registry.k8s.io/pause:3.10",
    surge: int | str | None = None,
    unavailable: int | str | None = None,
    external: bool = False,
    leader: bool = False,
    **extra: Any,
) -> dict[str, Any]:
    template: dict[str, Any] = {
        "size": size,
        "workerTemplate": {"spec": {"containers": [container("worker", image=image)]}},
    }
    if leader:
        template["leaderTemplate"] = {"spec": {"containers": [container("leader", image=image)]}}
    spec: dict[str, Any] = {"replicas": replicas, "leaderWorkerTemplate": template}
    if surge is not None or unavailable is not None:
        ruc: dict[str, Any] = {}
        if surge is not None:
            ruc["maxSurge"] = surge
        if unavailable is not None:
            ruc["maxUnavailable"] = unavailable
        spec["rolloutStrategy"] = {"rollingUpdateConfiguration": ruc}
    out: dict[str, Any] = {"name": name, "spec": spec, **extra}
    if external:
        out["scaling"] = {"mode": "External"}
    return out


def ds_body(name: str, *roles: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.KIND,
        "metadata": {"name": name},
        "spec": {"roles": list(roles), **spec},
    }


def ds_path(ns: str, name: str | None = None, sub: str | None = None) -> str:
    return resource_path(c.API_VERSION, c.PLURAL, namespace=ns, name=name, subresource=sub)


def scaler_path(ns: str, name: str | None = None, sub: str | None = None) -> str:
    return resource_path(c.API_VERSION, c.SCALER_PLURAL, namespace=ns, name=name, subresource=sub)


async def set_scale(kube: Kube, ns: str, name: str, replicas: int) -> None:
    """As an HPA does: read /scale, write it back with the new replicas; a write lost to
    another writer (the operator's status of the scaler) is done again, as the HPA's next sync
    would."""

    async def write() -> None:
        scale = await kube.get(scaler_path(ns, name, "scale"))
        scale["spec"]["replicas"] = replicas
        await kube.replace(scaler_path(ns, name, "scale"), scale)

    await retry_conflicts(write)


def children_path(ns: str) -> str:
    return resource_path(lc.API_VERSION, lc.PLURAL, namespace=ns)


def condition(obj: dict[str, Any], kind: str) -> str | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return str(cond.get("status"))
    return None


def available(ds: dict[str, Any]) -> bool:
    status = ds.get("status") or {}
    return (
        status.get("observedGeneration") == ds["metadata"]["generation"]
        and condition(ds, c.CONDITION_AVAILABLE) == "True"
    )


async def wait_ds(
    kube: Kube,
    ns: str,
    name: str,
    done: Callable[[dict[str, Any]], bool],
    what: str,
    timeout: float = TIMEOUT,
) -> dict[str, Any]:
    objs = await wait_for_objects(
        kube,
        ds_path(ns),
        lambda objs: f"{ns}/{name}" in objs and done(objs[f"{ns}/{name}"]),
        timeout=timeout,
        what=f"DisaggregatedSet {name}: {what}",
        field_selector=f"metadata.name={name}",
    )
    return objs[f"{ns}/{name}"]


def summary(objs: Objects) -> str:
    rows = []
    for key, o in sorted(objs.items()):
        status = o.get("status") or {}
        rows.append(
            f"- {key} replicas={(o.get('spec') or {}).get('replicas')} "
            f"status={status.get('replicas')}/{status.get('readyReplicas')}/"
            f"{status.get('updatedReplicas')} labels={labels_of(o).get(c.REVISION_LABEL)}"
        )
    return "\n".join(rows) or "(none)"


async def wait_children(
    kube: Kube,
    ns: str,
    name: str,
    done: Callable[[Objects], bool],
    what: str,
    timeout: float = TIMEOUT,
) -> Objects:
    return await wait_for_objects(
        kube,
        children_path(ns),
        done,
        timeout=timeout,
        what=f"LeaderWorkerSets of {name}: {what}",
        label_selector=f"{c.SET_NAME_LABEL}={name}",
        summary=summary,
    )


def replicas_of(objs: Objects) -> dict[str, int]:
    """Child name -> spec.replicas."""
    return {o["metadata"]["name"]: int(o["spec"].get("replicas", 1)) for o in objs.values()}


def settled(objs: Objects, want: dict[str, int]) -> bool:
    """Exactly these children, each with these replicas, all ready."""
    by_name = {o["metadata"]["name"]: o for o in objs.values()}
    if set(by_name) != set(want):
        return False
    for name, n in want.items():
        o = by_name[name]
        status = o.get("status") or {}
        if o["spec"].get("replicas") != n or status.get("readyReplicas", 0) != n:
            return False
        if n and status.get("observedGeneration") != o["metadata"].get("generation"):
            return False
    return True
