"""LeaderWorkerSets of real containers (lws-probe, the workload image's program) and what the
tests do with them from the host: HTTP to a pod's address (the host reaches the pod network
through the node's bridge), the operator's Deployment and Lease."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import aiohttp

from lws_operator.api import constants as c
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_testbed import binaries
from lws_testbed.realnode import pin_to_real_node
from lws_testbed.wait import Objects, wait_for_objects
from tests.cluster.controller.helpers import lws_body

REPO = Path(__file__).resolve().parents[2]
OPERATOR_NS = "lws-system"
DEPLOYMENT = "lws-controller-manager"
E2E_OVERLAY = "testbed/lws_testbed/deploy/e2e"
HTTP_PORT = 8080
RENDEZVOUS_PORT = 7000


def probe_container(image: str, *args: str) -> dict[str, Any]:
    return {
        "name": "probe",
        "image": image,
        "imagePullPolicy": "Never",  # local images only: nothing can be pulled
        "args": [f"--port={RENDEZVOUS_PORT}", f"--http={HTTP_PORT}", *args],
        "ports": [
            {"name": "rendezvous", "containerPort": RENDEZVOUS_PORT},
            {"name": "http", "containerPort": HTTP_PORT},
        ],
        "readinessProbe": {
            "httpGet": {"path": "/ready", "port": HTTP_PORT},
            "periodSeconds": 1,
            "failureThreshold": 1,
        },
    }


def probe_lws(
    name: str,
    image: str,
    *,
    replicas: int,
    size: int,
    args: tuple[str, ...] = (),
    leader_args: tuple[str, ...] | None = None,
    grace: int | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A LeaderWorkerSet of lws-probe pods on the real node."""

    def pod(*a: str) -> dict[str, Any]:
        body: dict[str, Any] = {"containers": [probe_container(image, *a)]}
        if grace is not None:
            body["terminationGracePeriodSeconds"] = grace
        return pin_to_real_node(body)

    lead = args if leader_args is None else leader_args
    return lws_body(
        name, replicas=replicas, size=size, leader_spec=pod(*lead), worker_spec=pod(*args), **spec
    )


async def pod_http(pod: dict[str, Any], path: str, *, method: str = "GET") -> tuple[int, str]:
    ip = pod["status"]["podIP"]
    async with (
        aiohttp.ClientSession() as session,
        session.request(
            method, f"http://{ip}:{HTTP_PORT}{path}", timeout=aiohttp.ClientTimeout(total=10)
        ) as resp,
    ):
        return resp.status, await resp.text()


async def reports(pod: dict[str, Any]) -> list[dict[str, Any]]:
    status, body = await pod_http(pod, "/reports")
    assert status == 200, body
    return list(json.loads(body))


async def group_pods(kube: Kube, ns: str, name: str) -> dict[str, dict[str, Any]]:
    listing = await kube.list(
        resource_path("v1", "pods", namespace=ns), label_selector=f"{c.SET_NAME_LABEL}={name}"
    )
    return {p["metadata"]["name"]: p for p in listing["items"]}


def restarts(pod: dict[str, Any]) -> int:
    return sum(s.get("restartCount", 0) for s in pod["status"].get("containerStatuses") or [])


async def lws_events(kube: Kube, ns: str, reason: str) -> list[dict[str, Any]]:
    listing = await kube.list(resource_path("events.k8s.io/v1", "events", namespace=ns))
    return [e for e in listing["items"] if e.get("reason") == reason]


async def operator_pods(kube: Kube) -> dict[str, dict[str, Any]]:
    listing = await kube.list(
        resource_path("v1", "pods", namespace=OPERATOR_NS),
        label_selector="control-plane=controller-manager",
    )
    return {p["metadata"]["name"]: p for p in listing["items"]}


async def lease_holder(kube: Kube) -> str:
    lease = await kube.get(
        resource_path(
            "coordination.k8s.io/v1", "leases", namespace=OPERATOR_NS, name="lws-operator"
        )
    )
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


async def wait_deployment(kube: Kube, want: int, *, timeout: float = 180) -> Objects:
    """The operator's Deployment with ``want`` ready, updated replicas and no others."""

    def done(objs: Objects) -> bool:
        d = objs.get(f"{OPERATOR_NS}/{DEPLOYMENT}") or {}
        s = d.get("status") or {}
        return (
            s.get("observedGeneration") == d.get("metadata", {}).get("generation")
            and (s.get("replicas") or 0) == want
            and (s.get("readyReplicas") or 0) == want
            and (s.get("updatedReplicas") or 0) == want
        )

    return await wait_for_objects(
        kube,
        resource_path("apps/v1", "deployments", namespace=OPERATOR_NS),
        done,
        timeout=timeout,
        what=f"the operator's Deployment at {want} ready replicas",
        field_selector=f"metadata.name={DEPLOYMENT}",
    )


def make_deploy(
    kubeconfig: Path, image: str, *, overlay: str = E2E_OVERLAY, timeout: float = 300
) -> None:
    """``make deploy`` of ``overlay`` (the e2e one) with ``image``, as ``make e2e-up`` runs it."""
    kubectl = binaries.bin_dir() / "kubectl"
    proc = subprocess.run(
        [
            "make",
            "--no-print-directory",
            "deploy",
            f"OVERLAY={overlay}",
            f"IMG={image}",
            f"KUBECTL={kubectl} --kubeconfig {kubeconfig}",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert proc.returncode == 0, f"make deploy failed:\n{proc.stdout}\n{proc.stderr}"
