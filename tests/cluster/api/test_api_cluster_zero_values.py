"""Go's zero values and nulls are stored as upstream stores them: each case of
``lws_cases.yaml`` with literal ``""`` or ``null`` values is created on this project's API
(CRD, admission policy and the operator's LeaderWorkerSet webhook, on the session's cluster)
and on upstream's (its CRD and defaulting webhook: the upstream manager v0.9.0, whose
defaulting is v0.10.0's, on a local cluster of its own), and the stored specs, and what
``kubectl get -o yaml`` prints of them, must match.

Upstream's webhook round-trips the object through Go structs, so it also writes Go's zero
values of the pod template (``metadata: {}`` and ``resources: {}``, which the API server
keeps); they mean nothing and are compared away (:func:`without_go_noise`), and only them.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import os
import subprocess
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from lws_operator.kube.client import ApiError, Kube
from lws_testbed import binaries, upstream
from lws_testbed.local import ClusterConfig, LocalCluster
from lws_testbed.lws_api import wait_zero_values
from tests.cluster.conftest import lws_path, upstream_bins_or_skip
from tests.unit.api.lws_testdata import Case, load_cases

_, VALID = load_cases()
ZERO_AND_NULL = [c for c in VALID if c.id.startswith(("go-zero-", "null-"))]

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("LWS_TEST_KUBECONFIG")),
    reason="runs the upstream LWS manager against a local cluster of its own",
)


@pytest.fixture(scope="module")
def upstream_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    upstream_bins_or_skip()
    cluster = LocalCluster(ClusterConfig(state_dir=tmp_path_factory.mktemp("upstream-api")))
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
async def upstream_kube(
    upstream_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Kube]:
    kube = await Kube.connect(upstream_cluster.kubeconfig(), user_agent="lws-zero-values")
    manager = await upstream.start_upstream(
        kube, upstream_cluster.kubeconfig("lws-upstream"), tmp_path_factory.mktemp("upstream")
    )
    try:
        yield kube
        manager.check_alive()
    finally:
        await manager.stop()
        await kube.close()


def without_go_noise(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec`` without the empty ``metadata`` and ``resources`` objects of pod templates."""
    out = copy.deepcopy(spec)
    template = out.get("leaderWorkerTemplate") or {}
    for key in ("leaderTemplate", "workerTemplate"):
        pod = template.get(key)
        if not isinstance(pod, dict):
            continue
        if pod.get("metadata") == {}:
            del pod["metadata"]
        for container in (pod.get("spec") or {}).get("containers") or []:
            if container.get("resources") == {}:
                del container["resources"]
    return out


def kubectl_spec(kubeconfig: Path, namespace: str, name: str) -> dict[str, Any]:
    out = subprocess.run(
        [
            str(binaries.bin_dir() / "kubectl"),
            f"--kubeconfig={kubeconfig}",
            "-n",
            namespace,
            "get",
            "lws",
            name,
            "-o",
            "yaml",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    spec: dict[str, Any] = yaml.safe_load(out)["spec"]
    return spec


@pytest.mark.parametrize("case", ZERO_AND_NULL, ids=str)
async def test_stored_as_upstream_stores_it(
    kube: Kube,
    kubeconfig: Path,
    api_namespace: str,
    upstream_kube: Kube,
    upstream_cluster: LocalCluster,
    case: Case,
) -> None:
    ours = await kube.create(lws_path(api_namespace), copy.deepcopy(case.obj))
    theirs = await upstream_kube.create(lws_path("default"), copy.deepcopy(case.obj))
    try:
        assert without_go_noise(ours["spec"]) == without_go_noise(theirs["spec"])
        assert without_go_noise(ours["spec"]) == ours["spec"]  # the noise is upstream's only
        assert ours["spec"]["rolloutStrategy"]["type"] == "RollingUpdate"
        ours_printed, theirs_printed = await asyncio.gather(
            asyncio.to_thread(kubectl_spec, kubeconfig, api_namespace, case.name),
            asyncio.to_thread(kubectl_spec, upstream_cluster.kubeconfig(), "default", case.name),
        )
        assert ours_printed == ours["spec"]
        assert without_go_noise(ours_printed) == without_go_noise(theirs_printed)
    finally:
        await upstream_kube.delete(lws_path("default", case.name))


async def test_only_writes_with_zero_values_need_the_operator(
    kube: Kube,
    api_namespace: str,
    pause_session_operator: Callable[[], contextlib.AbstractAsyncContextManager[None]],
) -> None:
    """The LeaderWorkerSet webhook's failure mode: while no operator answers, a write with a
    Go zero value is refused naming the webhook (never stored as ``""``), and every other
    LeaderWorkerSet write is admitted as usual (its matchConditions keep them away)."""
    plain, zero = VALID[0], next(c for c in ZERO_AND_NULL if c.id == "go-zero-rollout-type")
    async with pause_session_operator():
        stored = await kube.create(lws_path(api_namespace), copy.deepcopy(plain.obj), dry_run=True)
        assert stored["spec"]["rolloutStrategy"]["type"] == "RollingUpdate"
        with pytest.raises(ApiError) as refused:
            await kube.create(lws_path(api_namespace), copy.deepcopy(zero.obj), dry_run=True)
        assert refused.value.status == 500, refused.value
        assert 'failed calling webhook "mleaderworkerset.kb.io"' in refused.value.message
    await wait_zero_values(kube)
