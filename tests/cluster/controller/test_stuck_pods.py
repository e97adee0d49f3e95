"""Pods stuck terminating on a lost node (upstream #508, compatibility C10): the operator
force-deletes those of its own groups, so the group's names are free again, and never a pod
it did not make, even one carrying the LWS's name label (issue 12.6).

A lost node here is a Node object no kubelet (and no kwok) serves: pods bound to it never run,
and once deleted they stay terminating, as on a node that died."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from typing import Any

import pytest

from lws_operator.api import constants as c
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_testbed.local import LocalCluster
from lws_testbed.wait import Objects, wait_for_objects
from tests.cluster.controller.helpers import container, lws_body, lws_path, wait_pods


@pytest.fixture
async def lost_node(kube: Kube, local_cluster: LocalCluster | None) -> AsyncIterator[str]:
    if local_cluster is None:
        pytest.skip("adds a node no kubelet serves to the local cluster")
    name = f"lost-{secrets.token_hex(3)}"
    await kube.create(resource_path("v1", "nodes"), {"metadata": {"name": name}})
    yield name
    # The pod garbage collector then removes the pods still bound to it.
    await kube.delete(resource_path("v1", "nodes", name=name))


def pods_path(ns: str, name: str | None = None) -> str:
    return resource_path("v1", "pods", namespace=ns, name=name)


async def force_deleted(kube: Kube, ns: str, uid: str) -> list[str]:
    events = await wait_for_objects(
        kube,
        resource_path("events.k8s.io/v1", "events", namespace=ns),
        lambda objs: any(e["reason"] == "ForceDeletedStuckPod" for e in objs.values()),
        timeout=120,
        what="a ForceDeletedStuckPod event",
        field_selector=f"regarding.uid={uid}",
    )
    return [e["note"] for e in events.values() if e["reason"] == "ForceDeletedStuckPod"]


async def test_only_our_groups_pods_stuck_on_a_lost_node_are_force_deleted(
    kube: Kube, lws_namespace: str, lost_node: str
) -> None:
    ns, name = lws_namespace, "stuck"
    body = lws_body(
        name,
        replicas=1,
        size=2,
        worker_spec={"nodeName": lost_node, "containers": [container("worker")]},
    )
    body["spec"]["leaderWorkerTemplate"]["restartPolicy"] = "None"
    lws = await kube.create(lws_path(ns), body)
    pods = await wait_pods(
        kube, ns, name, lambda objs: f"{ns}/{name}-0-1" in objs, "the worker bound to the lost node"
    )
    worker = pods[f"{ns}/{name}-0-1"]
    # Someone else's pod with the LWS's name label (added after its creation, as the pod
    # webhook refuses LWS pods not made by a StatefulSet), on the same lost node.
    foreign: dict[str, Any] = {
        "metadata": {"name": f"{name}-lookalike"},
        "spec": {"nodeName": lost_node, "containers": [container("c")]},
    }
    await kube.create(pods_path(ns), foreign)
    foreign = await kube.patch(
        pods_path(ns, f"{name}-lookalike"), {"metadata": {"labels": {c.SET_NAME_LABEL: name}}}
    )
    # The look-alike first: it is overdue no later than the worker, so by the pass that
    # force-deletes the worker, it would be force-deleted too were it taken for ours.
    for pod in (foreign, worker):
        await kube.request(
            "DELETE",
            pods_path(ns, pod["metadata"]["name"]),
            body={"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 1},
        )

    notes = await force_deleted(kube, ns, lws["metadata"]["uid"])
    assert notes == [
        f"Pod {name}-0-1 was stuck terminating on lost node {lost_node}; force-deleted it"
    ]

    def replaced(objs: Objects) -> bool:
        new = objs.get(f"{ns}/{name}-0-1")
        return new is not None and new["metadata"]["uid"] != worker["metadata"]["uid"]

    await wait_pods(kube, ns, name, replaced, "the worker's name free again for its StatefulSet")
    still = await kube.get(pods_path(ns, foreign["metadata"]["name"]))
    assert still["metadata"]["uid"] == foreign["metadata"]["uid"]
    assert still["metadata"].get("deletionTimestamp"), "the look-alike is still terminating"
    assert await force_deleted(kube, ns, lws["metadata"]["uid"]) == notes
    await kube.delete(pods_path(ns, foreign["metadata"]["name"]), grace_period_seconds=0)
