"""Simulated nodes of a test's own (a pool), with topology labels nobody else uses.

Pods of these tests select the pool (``nodeSelector``) and request GPUs, so where they can go is
decided by the pool's shape alone, whatever other tests left on the default nodes. Each rack
and zone value is unique to the pool. The pool's pods are force-deleted and its nodes removed
afterwards.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from lws_operator.api import constants as c
from lws_operator.controller.operator import cluster_version, served_versions
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_operator.plan.lws import gang
from lws_testbed.local import LocalCluster
from lws_testbed.nodes import GPU_RESOURCE, RACK_LABEL, ZONE_LABEL, NodeShape, fake_nodes
from lws_testbed.wait import Objects, wait_for_objects
from tests.cluster.controller.helpers import container

POOL_LABEL = "lws-operator.local/pool"
NODES = resource_path("v1", "nodes")


def node_ready(node: dict[str, Any]) -> bool:
    return any(
        cond.get("type") == "Ready" and cond.get("status") == "True"
        for cond in (node.get("status") or {}).get("conditions") or []
    )


@dataclass
class NodePool:
    kube: Kube
    name: str
    nodes: list[str] = field(default_factory=list)
    racks: int = 0

    @property
    def selector(self) -> dict[str, str]:
        return {POOL_LABEL: self.name}

    def zone(self, index: int) -> str:
        return f"{self.name}-zone-{index}"

    async def add_rack(self, nodes: int = 2, *, zone: int = 0, gpus: int = 8) -> str:
        """A new rack of ``nodes`` nodes with ``gpus`` GPUs each, in zone ``zone``; returns
        its label value once its nodes are Ready."""
        rack = f"{self.name}-rack-{self.racks}"
        labels = {POOL_LABEL: self.name, ZONE_LABEL: self.zone(zone), RACK_LABEL: rack}
        shape = NodeShape(
            count=nodes, gpus=gpus, name_prefix=f"{self.name}-r{self.racks}", extra_labels=labels
        )
        self.racks += 1
        names = []
        for node in fake_nodes(shape):
            await self.kube.create(NODES, node)
            names.append(node["metadata"]["name"])
            self.nodes.append(names[-1])

        def ready(objs: Objects) -> bool:
            return all(node_ready(objs.get(n, {})) for n in names)

        await wait_for_objects(
            self.kube,
            NODES,
            ready,
            timeout=60,
            what=f"nodes {names} Ready",
            label_selector=f"{RACK_LABEL}={rack}",
        )
        return rack

    async def remove(self) -> None:
        for node in self.nodes:
            pods = await self.kube.list(
                resource_path("v1", "pods"), field_selector=f"spec.nodeName={node}"
            )
            for pod in pods["items"]:
                meta = pod["metadata"]
                await self.kube.delete(
                    resource_path("v1", "pods", namespace=meta["namespace"], name=meta["name"]),
                    grace_period_seconds=0,
                )
            await self.kube.delete(resource_path("v1", "nodes", name=node))


@pytest.fixture
async def node_pool(kube: Kube, local_cluster: LocalCluster | None) -> AsyncIterator[NodePool]:
    if local_cluster is None:
        pytest.skip("adds simulated nodes, which only the local cluster has")
    pool = NodePool(kube, f"pool-{secrets.token_hex(3)}")
    try:
        yield pool
    finally:
        await pool.remove()


def gpu_pod_spec(role: str, gpus: int, pool: NodePool) -> dict[str, Any]:
    """A pod template spec asking for ``gpus`` GPUs on a node of ``pool``."""
    limits = {GPU_RESOURCE: str(gpus)}
    return {
        "nodeSelector": pool.selector,
        "containers": [container(role, resources={"limits": limits, "requests": limits})],
    }


def pod_nodes(pods: Objects) -> dict[str, str | None]:
    """Pod name -> node name (None while unscheduled)."""
    return {p["metadata"]["name"]: (p.get("spec") or {}).get("nodeName") for p in pods.values()}


def by_group(pods: Objects) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for pod in pods.values():
        index = (pod["metadata"].get("labels") or {}).get(c.GROUP_INDEX_LABEL, "?")
        groups.setdefault(index, []).append(pod)
    return groups


def unschedulable(pod: dict[str, Any]) -> bool:
    """The scheduler has tried and given up on it for now (PodScheduled=False)."""
    return any(
        cond.get("type") == "PodScheduled" and cond.get("status") == "False"
        for cond in (pod.get("status") or {}).get("conditions") or []
    )


@dataclass(frozen=True)
class NativeGangs:
    """What the cluster under test serves of the native gang API, by discovery (as the
    operator decides): the PodGroup apiVersion it would write (None: none), and its version."""

    api: str | None
    cluster_version: str

    def unserved_reason(self) -> str:
        return (
            f"the cluster under test ({self.cluster_version}) serves no scheduling.k8s.io "
            f"PodGroup API the operator knows ({', '.join(gang.NATIVE_VERSIONS)}; discovery): "
            "native gang scheduling cannot run here"
        )


@pytest.fixture(scope="session")
async def native_gangs(kube: Kube) -> NativeGangs:
    served = await served_versions(kube, gang.NATIVE_GROUP)
    return NativeGangs(gang.native_api(served), await cluster_version(kube))
