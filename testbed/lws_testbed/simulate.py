"""Simulated pod reports for pods on kwok nodes, as a kubelet would write them.

kwok's stages never touch a Running pod (that has no Job owner) nor a Failed one, so a status
written here stays until the pod is deleted.

Readiness under the test's control: kwok's pod-ready stage skips pods annotated
``lws-operator.local/hold-ready`` (any value; see kwok-stages.yaml), which stay Pending.
:func:`make_ready` then writes what pod-ready would have written, and :func:`make_unready`
reports a running pod as no longer ready."""

from __future__ import annotations

import datetime
import hashlib
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.paths import resource_path

HOLD_READY_ANNOTATION = "lws-operator.local/hold-ready"
"""A pod carrying this annotation (any value) is left Pending by kwok; see make_ready."""

# Pod IPs written by make_ready when the pod has none: outside kwok's own pool (10.0.0.0/16,
# see local.py), so they never collide with an address kwok handed out.
_POD_IP_PREFIX = "10.1"
# Conflicts (the object changed between read and write) retried by retry_conflicts.
_CONFLICT_ATTEMPTS = 5
T = TypeVar("T")


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def restarted_status(
    pod: dict[str, Any],
    container: str | None = None,
    *,
    exit_code: int = 137,
    reason: str = "Error",
    message: str | None = None,
    signal: int | None = None,
) -> dict[str, Any]:
    """The pod's status after one container (default: the first) crashed and was restarted by
    the kubelet: restartCount + 1, lastState terminated (with the exit code, reason,
    termination message and signal given), running again."""
    status = pod.get("status") or {}
    statuses = [dict(cs) for cs in status.get("containerStatuses") or []]
    if not statuses:
        raise ValueError(f"pod {pod['metadata']['name']} has no container statuses yet")
    target = next((cs for cs in statuses if cs.get("name") == container), None)
    if container is not None and target is None:
        raise ValueError(f"pod {pod['metadata']['name']} has no container {container!r}")
    target = target or statuses[0]
    now = _now()
    started = (target.get("state") or {}).get("running", {}).get("startedAt", now)
    target["restartCount"] = int(target.get("restartCount") or 0) + 1
    terminated: dict[str, Any] = {
        "exitCode": exit_code,
        "reason": reason,
        "startedAt": started,
        "finishedAt": now,
    }
    if message is not None:
        terminated["message"] = message
    if signal is not None:
        terminated["signal"] = signal
    target["lastState"] = {"terminated": terminated}
    target["state"] = {"running": {"startedAt": now}}
    return {"containerStatuses": statuses}


def failed_status(pod: dict[str, Any]) -> dict[str, Any]:
    """The pod's status after all its containers exited with an error (phase Failed)."""
    now = _now()
    statuses = []
    for c in pod.get("spec", {}).get("containers", []):
        statuses.append(
            {
                "name": c["name"],
                "image": c.get("image", ""),
                "ready": False,
                "restartCount": 0,
                "state": {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": now}},
            }
        )
    conditions = [
        {"type": t, "status": "False", "lastTransitionTime": now}
        for t in ("Ready", "ContainersReady")
    ]
    return {"phase": "Failed", "containerStatuses": statuses, "conditions": conditions}


def pod_ip_for(pod: dict[str, Any]) -> str:
    """A stable pod IP for ``pod``: its current one, else one derived from its uid (or name)."""
    current = (pod.get("status") or {}).get("podIP")
    if current:
        return str(current)
    meta = pod.get("metadata") or {}
    seed = str(meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}")
    digest = hashlib.sha256(seed.encode()).digest()
    return f"{_POD_IP_PREFIX}.{digest[0]}.{1 + digest[1] % 254}"


def ready_status(
    pod: dict[str, Any], *, pod_ip: str, host_ip: str | None, now: str | None = None
) -> dict[str, Any]:
    """What kwok's pod-ready stage writes for a scheduled pod (kwok-stages.yaml): phase
    Running; Initialized, Ready, ContainersReady and every readiness gate True; each container
    running and ready with restartCount 0; each init container completed (a sidecar, i.e.
    restartPolicy Always: running and started); pod and host IPs; startTime.

    A strategic-merge patch body: conditions merge by type, so PodScheduled is kept."""
    now = now or _now()
    spec = pod.get("spec") or {}
    condition_types = ["Initialized", "Ready", "ContainersReady"]
    condition_types += [g["conditionType"] for g in spec.get("readinessGates") or []]
    status: dict[str, Any] = {
        "phase": "Running",
        "conditions": [
            {"type": t, "status": "True", "lastTransitionTime": now} for t in condition_types
        ],
        "containerStatuses": [
            {
                "name": c["name"],
                "image": c.get("image", ""),
                "ready": True,
                "restartCount": 0,
                "state": {"running": {"startedAt": now}},
            }
            for c in spec.get("containers") or []
        ],
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "startTime": now,
    }
    init_statuses = []
    for c in spec.get("initContainers") or []:
        cs: dict[str, Any] = {
            "name": c["name"],
            "image": c.get("image", ""),
            "ready": True,
            "restartCount": 0,
        }
        if c.get("restartPolicy") == "Always":
            cs["started"] = True
            cs["state"] = {"running": {"startedAt": now}}
        else:
            cs["state"] = {
                "terminated": {
                    "exitCode": 0,
                    "reason": "Completed",
                    "startedAt": now,
                    "finishedAt": now,
                }
            }
        init_statuses.append(cs)
    if init_statuses:
        status["initContainerStatuses"] = init_statuses
    if host_ip:
        status["hostIP"] = host_ip
        status["hostIPs"] = [{"ip": host_ip}]
    return status


def unready_status(pod: dict[str, Any], now: str | None = None) -> dict[str, Any]:
    """The pod's status after its readiness probe started failing: Ready and ContainersReady
    False, every container not ready (still running, no restart). The phase is not written,
    so a Running pod stays Running. A strategic-merge patch body, like ready_status."""
    status = pod.get("status") or {}
    statuses = [dict(cs) for cs in status.get("containerStatuses") or []]
    if not statuses:
        raise ValueError(f"pod {pod['metadata']['name']} has no container statuses yet")
    for cs in statuses:
        cs["ready"] = False
    now = now or _now()
    conditions = [
        {"type": t, "status": "False", "lastTransitionTime": now, "reason": "ContainersNotReady"}
        for t in ("Ready", "ContainersReady")
    ]
    return {"conditions": conditions, "containerStatuses": statuses}


async def _patch_status(
    kube: Kube, pod: dict[str, Any], status: dict[str, Any], *, kind: str = "merge"
) -> dict[str, Any]:
    meta = pod["metadata"]
    path = resource_path(
        "v1", "pods", namespace=meta["namespace"], name=meta["name"], subresource="status"
    )
    # The resourceVersion makes the patch fail with 409 if the pod changed since it was read.
    body = {"metadata": {"resourceVersion": meta["resourceVersion"]}, "status": status}
    return await kube.patch(path, body, kind=kind)


async def retry_conflicts(write: Callable[[], Awaitable[T]]) -> T:
    """Run ``write`` (a read and a write with the resourceVersion read); on a conflict (kwok,
    a controller wrote the object meanwhile) run it again, as a kubelet or an HPA would."""
    for attempt in range(_CONFLICT_ATTEMPTS):
        try:
            return await write()
        except ApiError as e:
            if not e.conflict or attempt == _CONFLICT_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


async def _report(
    kube: Kube,
    namespace: str,
    name: str,
    build: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]],
    *,
    kind: str = "strategic",
) -> dict[str, Any]:
    """Read the pod, build its status and patch it (with the resourceVersion precondition),
    again on a conflict."""
    path = resource_path("v1", "pods", namespace=namespace, name=name)

    async def write() -> dict[str, Any]:
        pod = await kube.get(path)
        return await _patch_status(kube, pod, await build(pod), kind=kind)

    return await retry_conflicts(write)


async def _host_ip(kube: Kube, node_name: str) -> str | None:
    node = await kube.get_or_none(resource_path("v1", "nodes", name=node_name))
    for address in ((node or {}).get("status") or {}).get("addresses") or []:
        if address.get("type") == "InternalIP":
            return str(address.get("address"))
    return None


async def make_ready(kube: Kube, namespace: str, name: str) -> dict[str, Any]:
    """Report a scheduled pod Running and Ready, as kwok's pod-ready stage would (for pods it
    held back because of HOLD_READY_ANNOTATION, or after make_unready); returns the patched
    pod. Raises ValueError if the pod is not scheduled yet: no kubelet runs it then."""

    async def build(pod: dict[str, Any]) -> dict[str, Any]:
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name:
            raise ValueError(f"pod {namespace}/{name} is not scheduled yet")
        host_ip = await _host_ip(kube, node_name)
        return ready_status(pod, pod_ip=pod_ip_for(pod), host_ip=host_ip)

    return await _report(kube, namespace, name, build)


async def make_unready(kube: Kube, namespace: str, name: str) -> dict[str, Any]:
    """Report that a running pod is no longer ready (its readiness probe fails); returns the
    patched pod."""

    async def build(pod: dict[str, Any]) -> dict[str, Any]:
        return unready_status(pod)

    return await _report(kube, namespace, name, build)


async def restart_container(
    kube: Kube, namespace: str, name: str, container: str | None = None, **terminated: Any
) -> dict[str, Any]:
    """Report one container restart of a running pod (``terminated``: exit_code, reason,
    message, signal of the run that ended); returns the patched pod."""

    async def build(pod: dict[str, Any]) -> dict[str, Any]:
        return restarted_status(pod, container, **terminated)

    return await _report(kube, namespace, name, build, kind="merge")


async def lose_node(kube: Kube, name: str) -> dict[str, Any]:
    """Report a kwok node as lost, as the node lifecycle controller does when its kubelet
    stops posting: kwok stops managing it (its annotation goes), Ready becomes Unknown, then
    the unreachable taint is added. Its pods are left as they are."""
    path = resource_path("v1", "nodes", name=name)
    await kube.patch(path, {"metadata": {"annotations": {"kwok.x-k8s.io/node": None}}})
    now = _now()
    ready = {
        "type": "Ready",
        "status": "Unknown",
        "reason": "NodeStatusUnknown",
        "message": "Kubelet stopped posting node status.",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }
    status_path = resource_path("v1", "nodes", name=name, subresource="status")
    await kube.patch(status_path, {"status": {"conditions": [ready]}}, kind="strategic")
    taint = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": now}
    return await kube.patch(path, {"spec": {"taints": [taint]}})


async def fail_pod(kube: Kube, namespace: str, name: str) -> dict[str, Any]:
    """Report that the pod failed (phase Failed); returns the patched pod."""

    async def build(pod: dict[str, Any]) -> dict[str, Any]:
        return failed_status(pod)

    return await _report(kube, namespace, name, build, kind="merge")
