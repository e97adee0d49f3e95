"""Fixtures of the controller tests."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_testbed.local import LocalCluster
from lws_testbed.nodes import NodeShape, fake_nodes

AddNode = Callable[[], Awaitable[None]]


@pytest.fixture
async def add_big_node(kube: Kube, local_cluster: LocalCluster | None) -> AsyncIterator[AddNode]:
    """Adds, when called, one simulated node with 32 GPUs (more than any default node: pods
    asking for 16 wait for it); every node added is removed afterwards."""
    if local_cluster is None:
        pytest.skip("needs to add simulated nodes to the local cluster")
    added: list[str] = []

    async def add() -> None:
        prefix = f"big-{secrets.token_hex(3)}"
        (node,) = fake_nodes(NodeShape(count=1, gpus=32, name_prefix=prefix))
        await kube.create(resource_path("v1", "nodes"), node)
        added.append(node["metadata"]["name"])

    yield add
    for node_name in added:
        await kube.delete(resource_path("v1", "nodes", name=node_name))
