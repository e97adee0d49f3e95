"""Simulated failures for pods on kwok nodes, as a kubelet would report them.

kwok's stages never touch a Running pod (that has no Job owner) nor a Failed one, so a status
written here stays until the pod is deleted."""

from __future__ import annotations

import datetime
from typing import Any

from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def restarted_status(pod: dict[str, Any], container: str | None = None) -> dict[str, Any]:
    """The pod's status after one container (default: the first) crashed and was restarted by
    the kubelet: restartCount + 1, lastState terminated, running again."""
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
    target["lastState"] = {
        "terminated": {
            "exitCode": 137,
            "reason": "Error",
            "startedAt": started,
            "finishedAt": now,
        }
    }
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


async def _patch_status(kube: Kube, pod: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    meta = pod["metadata"]
    path = resource_path(
        "v1", "pods", namespace=meta["namespace"], name=meta["name"], subresource="status"
    )
    # The resourceVersion makes the patch fail with 409 if the pod changed since it was read.
    body = {"metadata": {"resourceVersion": meta["resourceVersion"]}, "status": status}
    return await kube.patch(path, body, kind="merge")


async def restart_container(
    kube: Kube, namespace: str, name: str, container: str | None = None
) -> dict[str, Any]:
    """Report one container restart of a running pod; returns the patched pod."""
    pod = await kube.get(resource_path("v1", "pods", namespace=namespace, name=name))
    return await _patch_status(kube, pod, restarted_status(pod, container))


async def fail_pod(kube: Kube, namespace: str, name: str) -> dict[str, Any]:
    """Report that the pod failed (phase Failed); returns the patched pod."""
    pod = await kube.get(resource_path("v1", "pods", namespace=namespace, name=name))
    return await _patch_status(kube, pod, failed_status(pod))
