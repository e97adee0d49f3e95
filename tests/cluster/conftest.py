"""Fixtures for tests on a real cluster.

By default a local control plane (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, kwok with simulated GPU nodes) is started once per test session. With
``LWS_TEST_KUBECONFIG`` set, the same tests run against that cluster instead (kind, OpenShift):
nothing is started, and the cluster must have schedulable nodes.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from lws_operator.cluster.local import ClusterConfig, LocalCluster
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_operator.kube.wait import wait_for_objects


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.cluster)


@pytest.fixture(scope="session")
def local_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster | None]:
    """The local cluster this session started, or None when LWS_TEST_KUBECONFIG is set."""
    if os.environ.get("LWS_TEST_KUBECONFIG"):
        yield None
        return
    cluster = LocalCluster(ClusterConfig(state_dir=tmp_path_factory.mktemp("cluster")))
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def kubeconfig(local_cluster: LocalCluster | None) -> Path:
    if local_cluster is None:
        return Path(os.environ["LWS_TEST_KUBECONFIG"])
    return local_cluster.kubeconfig("admin")


@pytest.fixture(scope="session")
async def kube(kubeconfig: Path, local_cluster: LocalCluster | None) -> AsyncIterator[Kube]:
    client = await Kube.connect(kubeconfig, user_agent="lws-operator-tests")
    if local_cluster is not None:
        # Guard: tests that start their own cluster must never talk to another one.
        assert client.host == local_cluster.server, (client.host, local_cluster.server)
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
async def namespace(kube: Kube) -> AsyncIterator[str]:
    """A fresh namespace, ready for pods (its default ServiceAccount exists), deleted after."""
    name = f"t-{secrets.token_hex(4)}"
    await kube.create(
        resource_path("v1", "namespaces"),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
    )
    await wait_for_objects(
        kube,
        resource_path("v1", "serviceaccounts", namespace=name),
        lambda objs: f"{name}/default" in objs,
        timeout=60,
        what=f"the default ServiceAccount of namespace {name}",
    )
    try:
        yield name
    finally:
        await kube.delete(resource_path("v1", "namespaces", name=name), propagation="Background")
