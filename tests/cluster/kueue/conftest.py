"""Fixtures for the Kueue tests: a local cluster of their own with Kueue v0.19.2 running (its pod
webhook fails closed for every pod outside kube-system and kueue-system, so it must not run
beside the other tests), and the LWS controller under test on it.

``LWS_TEST_KUEUE_CONTROLLER`` picks the controller: ``ours`` (default, this operator) or
``upstream`` (the upstream LWS manager v0.9.0, the version Kueue's own CI pairs with v0.19.2,
run out of cluster by ``lws_testbed.upstream``), so the same scenarios run against both.
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lws_operator.api.admission_policy import install_documents
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_testbed import kueue, upstream
from lws_testbed.local import ClusterConfig, ClusterError, LocalCluster
from lws_testbed.manifests import create_namespace
from lws_testbed.operator_process import OperatorProcess, start_operator
from tests.cluster.conftest import upstream_bins_or_skip
from tests.cluster.kueue.helpers import dump_state

CONTROLLER_ENV = "LWS_TEST_KUEUE_CONTROLLER"
CONTROLLERS = ("ours", "upstream")
# Kueue's e2e ResourceFlavor selects nodes labelled so; every node of this cluster is.
FLAVOR_NODE_LABEL = {"instance-type": "on-demand"}

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("LWS_TEST_KUBECONFIG")),
    reason="the Kueue tests start a local cluster of their own with Kueue running in it",
)


def controller_name() -> str:
    name = os.environ.get(CONTROLLER_ENV, "ours")
    if name not in CONTROLLERS:
        raise pytest.UsageError(f"{CONTROLLER_ENV}={name!r}: must be one of {CONTROLLERS}")
    return name


@pytest.fixture(scope="package")
def upstream_bins() -> Path | None:
    """The upstream manager and its CRDs when the run is against upstream, else None."""
    if controller_name() != "upstream":
        return None
    return upstream_bins_or_skip()


def lws_api_documents(upstream_bins: Path | None) -> tuple[dict[str, Any], ...]:
    """The LeaderWorkerSet API of the controller under test: our CRD and policies, or
    upstream's CRDs (its webhooks come with its manager)."""
    if upstream_bins is None:
        return tuple(install_documents())
    return tuple(upstream.load_crds(upstream_bins))


@pytest.fixture(scope="package")
def kueue_cluster(
    upstream_bins: Path | None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    """A local cluster with Kueue, the LWS API installed before it. Started outside the event
    loop: LocalCluster.start() runs one of its own."""
    if shutil.which("go") is None and not kueue.built():
        pytest.skip("Kueue is not built, and Go is not on PATH to build it")
    options = kueue.KueueOptions(install_first=lws_api_documents(upstream_bins))
    cluster = LocalCluster(
        ClusterConfig(state_dir=tmp_path_factory.mktemp("kueue-cluster"), kueue=options)
    )
    try:
        cluster.start()
    except ClusterError as e:
        raise AssertionError(f"could not start the local cluster with Kueue: {e}") from None
    print(
        f"local cluster with Kueue: {cluster.started_seconds:.1f}s, of which Kueue "
        f"{cluster.kueue_seconds:.1f}s"
    )
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="package")
async def kube(kueue_cluster: LocalCluster) -> AsyncIterator[Kube]:
    """An admin client of the Kueue cluster (this package's ``kube``; never the session's)."""
    client = await Kube.connect(kueue_cluster.kubeconfig(), user_agent="lws-kueue-tests")
    assert client.host == kueue_cluster.server
    await label_nodes(client)
    try:
        yield client
    finally:
        await client.close()


async def label_nodes(kube: Kube) -> None:
    """Every node gets the label the e2e ResourceFlavor selects."""
    for node in (await kube.list(resource_path("v1", "nodes")))["items"]:
        await kube.patch(
            resource_path("v1", "nodes", name=node["metadata"]["name"]),
            {"metadata": {"labels": FLAVOR_NODE_LABEL}},
        )


@dataclass
class Controller:
    """The LWS controller the Kueue tests run against."""

    name: str  # "ours" or "upstream"
    log: Path
    ours: OperatorProcess | None = None
    theirs: upstream.UpstreamManager | None = None

    def check_alive(self) -> None:
        if self.ours is not None:
            self.ours.check_alive()
        if self.theirs is not None:
            self.theirs.check_alive()


@pytest.fixture(scope="package")
async def lws_controller(
    kube: Kube,
    kueue_cluster: LocalCluster,
    upstream_bins: Path | None,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[Controller]:
    work = tmp_path_factory.mktemp("lws-controller")
    if upstream_bins is None:
        op = await start_operator(kube, kueue_cluster.kubeconfig("lws-operator"), work / "op.log")
        controller = Controller("ours", op.log, ours=op)
    else:
        manager = await upstream.start_upstream(
            kube,
            kueue_cluster.kubeconfig("lws-upstream"),
            work,
            bins=upstream_bins,
            install=False,
        )
        controller = Controller("upstream", manager.log, theirs=manager)
    try:
        yield controller
        controller.check_alive()
    finally:
        if controller.ours is not None:
            await controller.ours.stop()
        if controller.theirs is not None:
            await controller.theirs.stop()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture
async def namespace(
    kube: Kube, lws_controller: Controller, request: pytest.FixtureRequest
) -> AsyncIterator[str]:
    """A fresh namespace of the Kueue cluster; when the test fails, the Workloads, pods and
    LeaderWorkerSets in it are printed before it is deleted."""
    name = f"k-{secrets.token_hex(4)}"
    await create_namespace(kube, name)
    try:
        yield name
    finally:
        report = getattr(request.node, "report_call", None)
        if report is None or report.failed:
            print(await dump_state(kube, name))
            print(f"{lws_controller.name} LWS controller log: {lws_controller.log}")
        await kube.delete(resource_path("v1", "namespaces", name=name), propagation="Background")
        lws_controller.check_alive()
