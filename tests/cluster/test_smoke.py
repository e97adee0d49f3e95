"""The local control plane behaves like Kubernetes: StatefulSets get pods on kwok nodes, the
StatefulSet controller replaces lost pods, the garbage collector removes dependents, and
simulated kubelet reports (container restart, pod failure) show up in pod status."""

from __future__ import annotations

from typing import Any

import pytest

from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_testbed.binaries import pins
from lws_testbed.local import LocalCluster
from lws_testbed.nodes import GPU_RESOURCE, RACK_LABEL, ZONE_LABEL
from lws_testbed.simulate import fail_pod, restart_container
from lws_testbed.wait import Objects, wait_for_objects

TIMEOUT = 60


def statefulset(name: str, replicas: int) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "podManagementPolicy": "Parallel",
            "serviceName": name,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]},
            },
        },
    }


def is_running_ready(pod: dict[str, Any]) -> bool:
    status = pod.get("status", {})
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    return (
        status.get("phase") == "Running" and ready and not pod["metadata"].get("deletionTimestamp")
    )


async def make_sts(kube: Kube, ns: str, name: str, replicas: int) -> Objects:
    await kube.create(
        resource_path("apps/v1", "statefulsets", namespace=ns), statefulset(name, replicas)
    )
    return await wait_for_objects(
        kube,
        resource_path("v1", "pods", namespace=ns),
        lambda pods: sum(is_running_ready(p) for p in pods.values()) == replicas,
        timeout=TIMEOUT,
        what=f"{replicas} Running and Ready pods of StatefulSet {name}",
        label_selector=f"app={name}",
    )


async def wait_replaced(kube: Kube, ns: str, name: str, old_uid: str) -> None:
    """Wait until pod ``name`` exists again with a new UID and is Running and Ready."""

    def replaced(objs: Objects) -> bool:
        pod = objs.get(f"{ns}/{name}")
        return pod is not None and pod["metadata"]["uid"] != old_uid and is_running_ready(pod)

    await wait_for_objects(
        kube,
        resource_path("v1", "pods", namespace=ns),
        replaced,
        timeout=TIMEOUT,
        what=f"{name} replaced by a new Running and Ready pod",
        field_selector=f"metadata.name={name}",
    )


async def test_parallel_statefulset_pods_run_on_kwok_nodes(kube: Kube, namespace: str) -> None:
    pods = await make_sts(kube, namespace, "web", 3)
    assert sorted(pods) == [f"{namespace}/web-{i}" for i in range(3)]
    nodes = {p["spec"]["nodeName"] for p in pods.values()}
    assert all(nodes), pods
    for pod in pods.values():
        assert pod["status"]["podIP"], pod["status"]
        assert pod["status"]["containerStatuses"][0]["ready"] is True


async def test_deleted_pod_is_recreated(kube: Kube, namespace: str) -> None:
    pods = await make_sts(kube, namespace, "web", 3)
    victim = pods[f"{namespace}/web-1"]
    old_uid = victim["metadata"]["uid"]
    await kube.delete(resource_path("v1", "pods", namespace=namespace, name="web-1"))

    await wait_replaced(kube, namespace, "web-1", old_uid)


async def test_deleting_statefulset_garbage_collects_pods(kube: Kube, namespace: str) -> None:
    await make_sts(kube, namespace, "web", 3)
    await kube.delete(
        resource_path("apps/v1", "statefulsets", namespace=namespace, name="web"),
        propagation="Background",
    )
    await wait_for_objects(
        kube,
        resource_path("v1", "pods", namespace=namespace),
        lambda pods: not pods,
        timeout=TIMEOUT,
        what="all pods of web garbage-collected",
        label_selector="app=web",
    )


async def test_simulated_container_restart_shows_in_status(kube: Kube, namespace: str) -> None:
    await make_sts(kube, namespace, "web", 1)
    patched = await restart_container(kube, namespace, "web-0")
    assert patched["status"]["containerStatuses"][0]["restartCount"] == 1
    pod = await kube.get(resource_path("v1", "pods", namespace=namespace, name="web-0"))
    status = pod["status"]["containerStatuses"][0]
    assert status["restartCount"] == 1
    assert status["lastState"]["terminated"]["exitCode"] == 137
    assert pod["status"]["phase"] == "Running"
    patched = await restart_container(kube, namespace, "web-0")
    assert patched["status"]["containerStatuses"][0]["restartCount"] == 2


async def test_failed_pod_is_replaced_by_statefulset(kube: Kube, namespace: str) -> None:
    pods = await make_sts(kube, namespace, "web", 1)
    old_uid = pods[f"{namespace}/web-0"]["metadata"]["uid"]
    failed = await fail_pod(kube, namespace, "web-0")
    assert failed["status"]["phase"] == "Failed"

    await wait_replaced(kube, namespace, "web-0", old_uid)


async def test_local_nodes_offer_gpus_in_two_topology_levels(
    kube: Kube, local_cluster: LocalCluster | None
) -> None:
    if local_cluster is None:
        pytest.skip("describes the local cluster's simulated nodes")
    nodes = (await kube.list(resource_path("v1", "nodes")))["items"]
    assert len(nodes) == local_cluster.config.nodes.count == 8
    zones = {n["metadata"]["labels"][ZONE_LABEL] for n in nodes}
    racks = {n["metadata"]["labels"][RACK_LABEL] for n in nodes}
    assert len(zones) == 2 and len(racks) == 4
    for n in nodes:
        assert n["status"]["allocatable"][GPU_RESOURCE] == "8"
        assert "taints" not in n["spec"]


async def test_local_control_plane_version_and_gang_api(
    kube: Kube, local_cluster: LocalCluster | None
) -> None:
    if local_cluster is None:
        pytest.skip("describes the local control plane build")
    version = await kube.get("/version")
    assert version["gitVersion"] == f"v{pins()['KUBE_VERSION']}"
    # The native gang API in the version this Kubernetes serves (none before 1.36).
    gang = local_cluster.kube_version.gang_api
    group = await kube.get("/apis/scheduling.k8s.io")
    served = {v["groupVersion"] for v in group["versions"]}
    if gang is None:
        assert served == {"scheduling.k8s.io/v1"}
        return
    assert gang.group_version in served
    resources = await kube.get(f"/apis/{gang.group_version}")
    kinds = {r["kind"] for r in resources["resources"]}
    assert {"Workload", "PodGroup"} <= kinds
