"""Quota holds across a takeover: the upstream LWS manager (v0.9.0) runs a LeaderWorkerSet
under Kueue, then this operator takes it over (as docs/operator.md says: upstream stopped, its
validating webhook configuration deleted, our CRD and policies applied over its CRD) and
scales it beyond the ClusterQueue's quota. Every pod, upstream's and ours, is recorded; the new
group waits, gated, until the quota is raised.

A local cluster of its own (upstream's CRD must be the one installed when Kueue starts), and
only against this operator: with ``LWS_TEST_KUEUE_CONTROLLER=upstream`` there is nothing to
take over.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from lws_operator.kube.client import Kube
from lws_testbed import kueue, upstream
from lws_testbed.local import ClusterConfig, LocalCluster
from lws_testbed.lws_api import install_lws_api, wait_lws_api
from lws_testbed.manifests import create_namespace
from lws_testbed.operator_process import start_operator
from tests.cluster.conftest import upstream_bins_or_skip
from tests.cluster.controller.helpers import lws_path, wait_lws
from tests.cluster.kueue.conftest import controller_name, label_nodes
from tests.cluster.kueue.gating import check_never_bypassed, recording
from tests.cluster.kueue.helpers import dump_state, queues, wait_kueue_pods, wait_workloads
from tests.cluster.kueue.test_quota_gating import (
    GROUP_GPUS,
    gpu_lws,
    group_gated,
    group_running,
    pending,
    set_gpu_quota,
    stays_gated,
)

NS = "takeover"

pytestmark = [
    pytest.mark.skipif(
        controller_name() != "ours", reason="a takeover by this operator: nothing to run upstream"
    ),
    pytest.mark.kueue_full,  # a cluster of its own and the upstream manager: make test-kueue
]


@pytest.fixture(scope="module")
def upstream_bins() -> Path:
    return upstream_bins_or_skip()


@pytest.fixture(scope="module")
def takeover_cluster(
    upstream_bins: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    options = kueue.KueueOptions(install_first=tuple(upstream.load_crds(upstream_bins)))
    cluster = LocalCluster(
        ClusterConfig(state_dir=tmp_path_factory.mktemp("takeover-cluster"), kueue=options)
    )
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
async def tkube(takeover_cluster: LocalCluster) -> AsyncIterator[Kube]:
    client = await Kube.connect(takeover_cluster.kubeconfig(), user_agent="lws-kueue-takeover")
    await label_nodes(client)
    try:
        yield client
    finally:
        await client.close()


async def test_pods_of_the_operator_that_took_over_wait_for_quota(
    tkube: Kube, takeover_cluster: LocalCluster, upstream_bins: Path, tmp_path: Path
) -> None:
    kube = tkube
    await create_namespace(kube, NS)
    ok = False
    try:
        async with queues(kube, NS, {"cpu": 64, "nvidia.com/gpu": 2 * GROUP_GPUS}) as q:
            async with recording(kube, NS) as rec:
                manager = await upstream.start_upstream(
                    kube,
                    takeover_cluster.kubeconfig("lws-upstream"),
                    tmp_path / "upstream",
                    bins=upstream_bins,
                    install=False,
                )
                try:
                    lws = await kube.create(lws_path(NS), gpu_lws("t", q.local_queue, 2))
                    await wait_kueue_pods(
                        kube,
                        NS,
                        "t",
                        lambda p: group_running(p, 0) and group_running(p, 1),
                        "both groups running under upstream",
                    )
                finally:
                    await manager.stop()
                await install_lws_api(kube, kueue.CRD_FIELD_MANAGER, wait=False)
                op = await start_operator(
                    kube, takeover_cluster.kubeconfig("lws-operator"), tmp_path / "op.log"
                )
                try:
                    # Probed once our operator runs (it replaces upstream's webhook
                    # configuration, which refuses LWS writes until then).
                    await wait_lws_api(kube)
                    uid = lws["metadata"]["uid"]
                    await kube.patch(lws_path(NS, "t"), {"spec": {"replicas": 3}})
                    await wait_workloads(kube, NS, uid, lambda w: pending(w.get(2)), "2 pending")
                    await wait_kueue_pods(kube, NS, "t", lambda p: group_gated(p, 2), "gated")
                    await stays_gated(kube, NS, "t", 2)
                    await set_gpu_quota(kube, q, 3 * GROUP_GPUS)
                    await wait_lws(
                        kube,
                        NS,
                        "t",
                        lambda o: (o.get("status") or {}).get("readyReplicas") == 3,
                        "3 groups ready under this operator",
                    )
                    op.check_alive()
                finally:
                    await op.stop()
            check_never_bypassed(rec, "t", uid)
            ok = True
    finally:
        if not ok:
            print(await dump_state(kube, NS))
