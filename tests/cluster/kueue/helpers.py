"""Kueue's LWS test scenarios in Python: its test LeaderWorkerSet
(``pkg/util/testingjobs/leaderworkerset``), queues, Workload lookups, and waits on watches that
print the Workloads' and pods' state when they time out."""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from lws_operator.api import constants as c
from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.paths import resource_path
from lws_operator.plan.lws.groups import labels_of, pod_ready
from lws_testbed import kueue
from lws_testbed.wait import Objects, wait_for_objects
from tests.cluster.controller.helpers import condition, lws_path, wait_pods

TIMEOUT = 90
# The annotation Kueue puts on each group's Workload: the group index.
WORKLOAD_INDEX_ANNOTATION = "kueue.x-k8s.io/component-workload-index"
AGNHOST = "registry.k8s.io/e2e-test-images/agnhost:2.53"
AGNHOST_OLD = "registry.k8s.io/e2e-test-images/agnhost:2.52"


def kueue_lws(
    name: str,
    *,
    queue: str | None,
    size: int = 1,
    replicas: int = 1,
    cpu: str = "200m",
    image: str = AGNHOST,
    leader_cpu: str | None = None,
    startup: str | None = None,
    restart_policy: str | None = None,
    priority_class: str | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Kueue's MakeLeaderWorkerSet(...).Image(...).Size(...).Replicas(...)
    .RequestAndLimit(cpu, ...).TerminationGracePeriod(1).Queue(...): a worker template with one
    container requesting and limited to ``cpu``; with ``leader_cpu``, a leader template whose
    container only requests that much (its "different resource needs" case)."""

    def container(request: str, limit: bool) -> dict[str, Any]:
        resources: dict[str, Any] = {"requests": {"cpu": request}}
        if limit:
            resources["limits"] = {"cpu": request}
        return {"name": "c", "image": image, "args": ["pause"], "resources": resources}

    template: dict[str, Any] = {
        "size": size,
        "workerTemplate": {
            "spec": {
                "containers": [container(cpu, True)],
                "terminationGracePeriodSeconds": 1,
            }
        },
    }
    if leader_cpu is not None:
        template["leaderTemplate"] = {
            "spec": {
                "containers": [container(leader_cpu, False)],
                "nodeSelector": {},
                "terminationGracePeriodSeconds": 1,
            }
        }
    if restart_policy:
        template["restartPolicy"] = restart_policy
    meta_labels = dict(labels or {})
    if queue is not None:
        meta_labels[kueue.QUEUE_LABEL] = queue
    if priority_class is not None:
        meta_labels[kueue.PRIORITY_CLASS_LABEL] = priority_class
    spec: dict[str, Any] = {"replicas": replicas, "leaderWorkerTemplate": template}
    if startup:
        spec["startupPolicy"] = startup
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.KIND,
        "metadata": {"name": name, "labels": meta_labels},
        "spec": spec,
    }


@dataclass(frozen=True)
class Queues:
    flavor: str
    cluster_queue: str
    local_queue: str
    namespace: str


@contextlib.asynccontextmanager
async def queues(
    kube: Kube,
    namespace: str,
    quota: dict[str, str | int] | None = None,
    *,
    preemption: dict[str, str] | None = None,
    local_queue: str | None = None,
) -> AsyncIterator[Queues]:
    """Kueue's e2e BeforeEach: a ResourceFlavor (nodes labelled instance-type=on-demand), a
    ClusterQueue (5 CPU unless ``quota``), a LocalQueue in ``namespace``, each waited on until
    Active; deleted afterwards (the LWS objects first, so that Workloads are released)."""
    suffix = secrets.token_hex(3)
    q = Queues(f"rf-{suffix}", f"cq-{suffix}", local_queue or f"lq-{suffix}", namespace)
    await kube.create(
        kueue.path("resourceflavors"),
        kueue.resource_flavor(q.flavor, {"instance-type": "on-demand"}),
    )
    await kube.create(
        kueue.path("clusterqueues"),
        kueue.cluster_queue(q.cluster_queue, q.flavor, quota or {"cpu": 5}, preemption=preemption),
    )
    await kube.create(
        kueue.path("localqueues", namespace),
        kueue.local_queue(q.local_queue, namespace, q.cluster_queue),
    )
    await wait_active(kube, kueue.path("clusterqueues"), q.cluster_queue)
    await wait_active(kube, kueue.path("localqueues", namespace), f"{namespace}/{q.local_queue}")
    try:
        yield q
    finally:
        await kube.request("DELETE", lws_path(namespace), query={"propagationPolicy": "Foreground"})
        await wait_for_objects(
            kube,
            resource_path("v1", "pods", namespace=namespace),
            lambda objs: not objs,
            timeout=TIMEOUT,
            what=f"every pod of {namespace} gone",
        )
        await kube.delete(kueue.path("localqueues", namespace, q.local_queue))
        await kube.delete(kueue.path("clusterqueues", name=q.cluster_queue))
        await kube.delete(kueue.path("resourceflavors", name=q.flavor))


async def wait_active(kube: Kube, collection: str, key: str) -> None:
    await wait_for_objects(
        kube,
        collection,
        lambda objs: (condition(objs.get(key) or {}, "Active") or {}).get("status") == "True",
        timeout=TIMEOUT,
        what=f"{key} Active",
    )


# ---- Workloads ---------------------------------------------------------------------------------
def workload_index(wl: dict[str, Any]) -> int | None:
    value = (wl["metadata"].get("annotations") or {}).get(WORKLOAD_INDEX_ANNOTATION)
    return int(value) if value is not None and value.isdigit() else None


def owned_by(wl: dict[str, Any], uid: str) -> bool:
    return any(ref.get("uid") == uid for ref in wl["metadata"].get("ownerReferences") or [])


def workloads_of(objs: Objects, uid: str) -> dict[int, dict[str, Any]]:
    """The Workloads owned by the LWS with ``uid``, by group index."""
    out = {}
    for wl in objs.values():
        index = workload_index(wl)
        if index is not None and owned_by(wl, uid):
            out[index] = wl
    return out


def is_true(obj: dict[str, Any], type_: str) -> bool:
    return (condition(obj, type_) or {}).get("status") == "True"


def admitted(wl: dict[str, Any]) -> bool:
    return is_true(wl, "Admitted")


def short_workloads(objs: Objects) -> str:
    rows = []
    for key, wl in sorted(objs.items()):
        conds = ", ".join(
            f"{x.get('type')}={x.get('status')}({x.get('reason')})"
            for x in (wl.get("status") or {}).get("conditions") or []
        )
        owners = ",".join(r.get("name", "") for r in wl["metadata"].get("ownerReferences") or [])
        rows.append(
            f"- {key} index={workload_index(wl)} owner={owners or '-'} "
            f"active={wl['spec'].get('active', True)} queue={wl['spec'].get('queueName')} "
            f"priority={wl['spec'].get('priority')} {conds}"
        )
    return "\n".join(rows) or "(no Workloads)"


def short_pods(objs: Objects) -> str:
    rows = []
    for key, p in sorted(objs.items()):
        labels = labels_of(p)
        annotations = p["metadata"].get("annotations") or {}
        gates = [g["name"] for g in p["spec"].get("schedulingGates") or []]
        rows.append(
            f"- {key} uid={p['metadata']['uid'][:8]} phase={p.get('status', {}).get('phase')} "
            f"ready={pod_ready(p)} group={labels.get(c.GROUP_INDEX_LABEL)} "
            f"gates={gates or '-'} node={p['spec'].get('nodeName') or '-'} "
            f"workload={annotations.get(kueue.PREBUILT_WORKLOAD_ANNOTATION, '-')} "
            f"rev={labels.get('controller-revision-hash', '-')} "
            f"deleting={bool(p['metadata'].get('deletionTimestamp'))}"
        )
    return "\n".join(rows) or "(no pods)"


async def dump_state(kube: Kube, namespace: str) -> str:
    """Workloads, pods and LeaderWorkerSets of ``namespace``, for a failing test."""
    try:
        wls = await kube.list(kueue.path("workloads", namespace))
        pods = await kube.list(resource_path("v1", "pods", namespace=namespace))
        sets = await kube.list(lws_path(namespace))
    except ApiError as e:
        return f"could not read the state of {namespace}: {e}"
    lws_rows = [
        f"- {o['metadata']['name']} generation={o['metadata'].get('generation')} "
        f"status={json.dumps(o.get('status') or {}, sort_keys=True)[:800]}"
        for o in sets["items"]
    ]
    key = lambda o: f"{namespace}/{o['metadata']['name']}"  # noqa: E731
    return (
        f"--- state of namespace {namespace}\nWorkloads:\n"
        + short_workloads({key(o): o for o in wls["items"]})
        + "\nPods:\n"
        + short_pods({key(o): o for o in pods["items"]})
        + "\nLeaderWorkerSets:\n"
        + ("\n".join(lws_rows) or "(none)")
    )


async def wait_workloads(
    kube: Kube,
    namespace: str,
    uid: str,
    done: Callable[[dict[int, dict[str, Any]]], bool],
    what: str,
    timeout: float = TIMEOUT,
) -> dict[int, dict[str, Any]]:
    """Until ``done`` holds for the LWS's Workloads by group index."""
    objs = await wait_for_objects(
        kube,
        kueue.path("workloads", namespace),
        lambda objs: done(workloads_of(objs, uid)),
        timeout=timeout,
        what=f"Workloads: {what}",
        summary=short_workloads,
    )
    return workloads_of(objs, uid)


async def wait_admitted(kube: Kube, namespace: str, uid: str, index: int = 0) -> dict[str, Any]:
    """Group ``index``'s Workload, once admitted."""
    wls = await wait_workloads(
        kube, namespace, uid, lambda w: index in w and admitted(w[index]), f"{index} admitted"
    )
    return wls[index]


async def wait_kueue_pods(
    kube: Kube,
    namespace: str,
    name: str,
    done: Callable[[Objects], bool],
    what: str,
    timeout: float = TIMEOUT,
) -> Objects:
    """``wait_pods``, showing each pod's scheduling gates and Workload on a timeout."""
    return await wait_pods(kube, namespace, name, done, what, timeout, summary=short_pods)


async def holds_for(
    kube: Kube,
    path: str,
    keep: Callable[[Objects], bool],
    seconds: float,
    what: str,
    summary: Callable[[Objects], str] = short_workloads,
) -> None:
    """Gomega's Consistently on a watch: ``keep`` must hold on every state observed for
    ``seconds`` (the only bounded wait here that succeeds by lasting)."""

    broken: list[str] = []

    def check(objs: Objects) -> bool:
        if not keep(objs):
            broken.append(summary(objs))
            return True
        return False

    with contextlib.suppress(TimeoutError):
        await wait_for_objects(kube, path, check, timeout=seconds, what=what, summary=summary)
    assert not broken, f"{what} stopped holding within {seconds:.0f}s:\n{broken[0]}"


def gated(pod: dict[str, Any]) -> bool:
    return any(
        g.get("name") == kueue.ADMISSION_GATE for g in pod["spec"].get("schedulingGates") or []
    )


async def set_workload_active(kube: Kube, wl: dict[str, Any], active: bool) -> None:
    meta = wl["metadata"]
    await kube.patch(
        kueue.path("workloads", meta["namespace"], meta["name"]), {"spec": {"active": active}}
    )
