"""Fixtures for tests on a real cluster.

By default a local control plane (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, kwok with simulated GPU nodes) is started once per test session. With
``LWS_TEST_KUBECONFIG`` set, the same tests run against that cluster instead (kind, OpenShift):
nothing is started, and the cluster must have schedulable nodes.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from lws_operator.api import constants as c
from lws_operator.api import ds_admission_policy, ds_crd
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_testbed import upstream
from lws_testbed.local import ClusterConfig, LocalCluster
from lws_testbed.lws_api import install_lws_api
from lws_testbed.manifests import Applier, create_namespace
from lws_testbed.operator_process import OperatorProcess, RunAs, start_operator

FIELD_MANAGER = "lws-api-tests"
ADMISSION = "admissionregistration.k8s.io/v1"


def lws_path(namespace: str, name: str | None = None, subresource: str | None = None) -> str:
    return resource_path(
        c.API_VERSION, c.PLURAL, namespace=namespace, name=name, subresource=subresource
    )


async def install_ds_api(kube: Kube, field_manager: str = FIELD_MANAGER) -> None:
    """The DisaggregatedSet and DisaggregatedSetRoleScaler CRDs (served) and the
    DisaggregatedSet admission policies."""
    docs = [ds_crd.custom_resource_definition(), ds_crd.scaler_custom_resource_definition()]
    await Applier(kube, field_manager).apply_all([*docs, *ds_admission_policy.policies()])


@pytest.fixture(scope="session")
async def lws_api(kube: Kube) -> AsyncIterator[None]:
    """The LeaderWorkerSet CRD and admission policies, installed and in effect; and the
    DisaggregatedSet API (its policies' effect is waited for by the tests that need it)."""
    await install_lws_api(kube, FIELD_MANAGER)
    await install_ds_api(kube)
    yield


def upstream_bins_or_skip() -> Path:
    """The upstream LWS manager and its CRDs, built when missing. Skips only when Go is not
    there to build them; any other build failure fails the test."""
    try:
        return upstream.upstream_dir()
    except upstream.UpstreamUnavailable as e:
        if shutil.which("go") is None:
            pytest.skip("the upstream LWS manager is not built, and Go is not on PATH to build it")
        raise AssertionError(str(e)) from None


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
    await create_namespace(kube, name)
    try:
        yield name
    finally:
        await kube.delete(resource_path("v1", "namespaces", name=name), propagation="Background")


@pytest.fixture(scope="session")
async def operator(
    kube: Kube,
    kubeconfig: Path,
    local_cluster: LocalCluster | None,
    lws_api: None,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[OperatorProcess | None]:
    """The operator, running for the whole session as its own process. With
    LWS_TEST_OPERATOR=external it is expected to run already (deployed in the cluster)."""
    if os.environ.get("LWS_TEST_OPERATOR") == "external":
        yield None
        return
    own = local_cluster.kubeconfig("lws-operator") if local_cluster else kubeconfig
    log = tmp_path_factory.mktemp("operator") / "operator.log"
    op = await start_operator(kube, own, log)
    try:
        yield op
        op.check_alive()
    finally:
        await op.stop()


@pytest.fixture(scope="session")
def pause_session_operator(
    operator: OperatorProcess | None, kube: Kube
) -> Callable[[], contextlib.AbstractAsyncContextManager[None]]:
    """``async with pause_session_operator():`` stops the session's operator for the block
    (so another operator can own the LWS objects meanwhile: two must never reconcile the same
    objects) and starts it again afterwards with the same arguments."""

    depth = 0  # nested pauses (a module's and a test's) restart it once, at the outermost

    @contextlib.asynccontextmanager
    async def paused() -> AsyncIterator[None]:
        nonlocal depth
        if operator is None:
            pytest.skip("LWS_TEST_OPERATOR=external: the deployed operator cannot be paused")
        if depth == 0:
            operator.check_alive()
            await operator.stop()
        depth += 1
        try:
            yield
        finally:
            depth -= 1
            if depth == 0:
                await operator.restart(kube)

    return paused


@pytest.fixture(scope="session")
def replace_session_operator(
    pause_session_operator: Callable[[], contextlib.AbstractAsyncContextManager[None]],
    kube: Kube,
    kubeconfig: Path,
    local_cluster: LocalCluster | None,
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[..., contextlib.AbstractAsyncContextManager[OperatorProcess]]:
    """``async with replace_session_operator(*args, kubeconfig=FILE) as op:`` runs another
    operator process (``lws-operator run *args``, with ``FILE``'s credentials; by default the
    session operator's; under ``run_as``'s UID when given) in place of the session's for the
    block."""

    @contextlib.asynccontextmanager
    async def replaced(
        *args: str, kubeconfig: Path | None = None, run_as: RunAs | None = None
    ) -> AsyncIterator[OperatorProcess]:
        own = local_cluster.kubeconfig("lws-operator") if local_cluster else kubeconfig_
        log = tmp_path_factory.mktemp("operator") / "operator.log"
        async with pause_session_operator():
            op = await start_operator(kube, kubeconfig or own, log, *args, run_as=run_as)
            try:
                yield op
                op.check_alive()
            finally:
                await op.stop()

    kubeconfig_ = kubeconfig
    return replaced


@pytest.fixture
async def lws_namespace(namespace: str, operator: OperatorProcess | None) -> AsyncIterator[str]:
    """A fresh namespace with the operator running; fails the test if the operator died."""
    yield namespace
    if operator is not None:
        operator.check_alive()
