"""``kubectl drain`` of nodes holding pods of several groups, with the real scheduler and the
eviction webhook (plan/lws/disruption.py): every group is moved whole, surge first, never more than
B groups down, and the drain's own retries are the only waiting.

Each LWS runs on a node pool of its own: created on just enough nodes that every node holds
pods of several groups, then spare nodes are added for the surge and rebuilt groups.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lws_operator.api import constants as c
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_operator.plan.meta import pod_ready
from lws_testbed.local import LocalCluster
from tests.cluster.controller.helpers import (
    container,
    create_available,
    is_available,
    lws_body,
    wait_lws,
    wait_pods,
)
from tests.cluster.disruption.helpers import (
    SIZE,
    Watcher,
    diagnostics,
    drain,
    gpu_lws,
    pods_by_node,
)
from tests.cluster.scheduling.conftest import POOL_LABEL, NodePool

pytestmark = pytest.mark.timeout(400)


def _elsewhere() -> dict[str, Any]:
    """A pod spec kept off every node pool (on the default nodes)."""
    return {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": POOL_LABEL, "operator": "DoesNotExist"}]}
                    ]
                }
            }
        },
        "containers": [container("c")],
    }


async def _bystanders(kube: Kube, ns: str, pool: NodePool, node: str) -> dict[str, str]:
    """Another LWS and a pod of no LWS, both off the pool, and a pod of no LWS on ``node``
    (drained with it); returns the uids of the first two's pods."""
    other = lws_body(
        "other", replicas=1, size=2, leader_spec=_elsewhere(), worker_spec=_elsewhere()
    )
    await create_available(kube, ns, other)
    pods = resource_path("v1", "pods", namespace=ns)
    await kube.create(
        pods,
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "plain"}, "spec": _elsewhere()},
    )
    await kube.create(
        pods,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "plain-on-drained"},
            "spec": {
                "nodeSelector": {"kubernetes.io/hostname": node},
                "containers": [container("c")],
            },
        },
    )
    listing = await kube.list(pods)
    want = {"plain", "other-0", "other-0-1"}
    running = await wait_pods(
        kube,
        ns,
        "other",
        lambda objs: sum(pod_ready(p) for p in objs.values()) == 2,
        "both pods of other ready",
    )
    uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in running.values()}
    uids |= {
        p["metadata"]["name"]: p["metadata"]["uid"]
        for p in listing["items"]
        if p["metadata"]["name"] == "plain"
    }
    assert set(uids) == want, uids
    return uids


async def _unaffected(kube: Kube, ns: str, before: dict[str, str]) -> None:
    listing = await kube.list(resource_path("v1", "pods", namespace=ns))
    now = {p["metadata"]["name"]: p["metadata"]["uid"] for p in listing["items"]}
    assert {k: now.get(k) for k in before} == before, "a pod outside the drained LWS was touched"
    assert "plain-on-drained" not in now, "the drain evicts pods of no LWS as usual"


async def _drain_case(
    kube: Kube,
    kubeconfig: Path,
    ns: str,
    pool: NodePool,
    *,
    nodes: int,
    replicas: int,
    spares: int,
    drain_nodes: int,
) -> tuple[Watcher, str]:
    await pool.add_rack(nodes)
    name = "moved"
    await create_available(kube, ns, gpu_lws(name, pool, replicas=replicas))
    placed = await pods_by_node(kube, ns, name)
    drained = sorted(placed)[:drain_nodes]
    assert len(placed) == nodes and all(len(p) == 8 // 2 for p in placed.values()), placed
    for node, pods in placed.items():
        groups = {p["metadata"]["labels"][c.GROUP_INDEX_LABEL] for p in pods}
        assert len(groups) >= 2, f"node {node} should hold pods of several groups: {groups}"
    before = await _bystanders(kube, ns, pool, drained[0])
    await pool.add_rack(spares)
    watcher = Watcher(kube, ns, name, replicas)
    async with watcher.watching(floor=replicas - 1):
        out = await drain(kubeconfig, *drained)
        try:
            lws = await wait_lws(
                kube, ns, name, lambda o: is_available(o, replicas), "Available again", timeout=90
            )
        except TimeoutError as e:
            raise AssertionError(f"{e}\n{await diagnostics(kube, ns, name)}") from e
    assert watcher.low == [], "\n".join(watcher.low[:3])
    assert lws["status"]["replicas"] == replicas  # the surge groups are given back
    after = await pods_by_node(kube, ns, name)
    assert not set(after) & set(drained), f"pods left on drained nodes: {after.keys()}"
    assert sum(len(p) for p in after.values()) == replicas * SIZE
    await _unaffected(kube, ns, before)
    return watcher, out


async def test_drain_one_node(
    kube: Kube,
    kubeconfig: Path,
    lws_namespace: str,
    node_pool: NodePool,
    local_cluster: LocalCluster | None,
) -> None:
    """Drain one node holding pods of several groups: every group with a pod there is moved
    whole, each surge first (its replacement Ready before any of its pods is deleted), and
    never fewer than R - 1 groups available at any pod event."""
    watcher, out = await _drain_case(
        kube, kubeconfig, lws_namespace, node_pool, nodes=2, replicas=4, spares=2, drain_nodes=1
    )
    moved = {r.group for r in watcher.releases}
    assert len(moved) >= 2, watcher.releases
    assert all(r.surge_ready for r in watcher.releases), watcher.releases
    assert "will retry after" in out  # the 429s the drain waited out
    print(f"{watcher.events} pod events, min available {watcher.min_available}, moves {moved}")


async def test_drain_three_nodes(
    kube: Kube,
    kubeconfig: Path,
    lws_namespace: str,
    node_pool: NodePool,
    local_cluster: LocalCluster | None,
) -> None:
    """Drain three nodes at once (one kubectl drain): every group is moved, one at a time
    (B = 1), surge first."""
    watcher, _ = await _drain_case(
        kube, kubeconfig, lws_namespace, node_pool, nodes=3, replicas=6, spares=4, drain_nodes=3
    )
    assert {r.group for r in watcher.releases} == set(range(6)), watcher.releases
    assert all(r.surge_ready for r in watcher.releases), watcher.releases
    print(f"{watcher.events} pod events, min available {watcher.min_available}")
