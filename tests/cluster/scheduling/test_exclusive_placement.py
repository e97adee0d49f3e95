"""Exclusive placement on the real scheduler (upstream's SetExclusiveAffinities,
pkg/webhooks/pod_webhook.go, and setNodeSelectorForWorkerPods, pkg/controllers/pod_controller.go):
one group, or one subgroup, per topology domain; a group or subgroup without a free domain stays
Pending instead of splitting.

Every pod asks for 2 GPUs on a node pool of the test's own, with rack and zone values nobody
else uses, so only the pool's shape decides where pods can go: a rack always has room for more
than a group, and only exclusivity keeps groups apart.
"""

from __future__ import annotations

from typing import Any

from lws_operator.api import constants as c
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_operator.plan.meta import pod_ready
from lws_testbed.nodes import RACK_LABEL, ZONE_LABEL
from lws_testbed.wait import Objects
from tests.cluster.controller.helpers import (
    is_available,
    list_of,
    lws_body,
    lws_path,
    wait_lws,
    wait_pods,
)
from tests.cluster.scheduling.conftest import (
    POOL_LABEL,
    NodePool,
    by_group,
    gpu_pod_spec,
    unschedulable,
)

GPUS = 2


def exclusive_lws(
    name: str, pool: NodePool, *, replicas: int, size: int, annotations: dict[str, str], **spec: Any
) -> dict[str, Any]:
    return lws_body(
        name,
        replicas=replicas,
        size=size,
        annotations=annotations,
        leader_spec=gpu_pod_spec("leader", GPUS, pool),
        worker_spec=gpu_pod_spec("worker", GPUS, pool),
        **spec,
    )


async def topology(kube: Kube, pool: NodePool) -> dict[str, tuple[str, str]]:
    """Node name -> (zone, rack) of the pool's nodes."""
    nodes = await kube.list(
        resource_path("v1", "nodes"), label_selector=f"{POOL_LABEL}={pool.name}"
    )
    return {
        n["metadata"]["name"]: (
            n["metadata"]["labels"][ZONE_LABEL],
            n["metadata"]["labels"][RACK_LABEL],
        )
        for n in nodes["items"]
    }


def domains(pods: list[dict[str, Any]], nodes: dict[str, tuple[str, str]], level: int) -> set[str]:
    """The zones (level 0) or racks (level 1) of the nodes ``pods`` are bound to."""
    return {nodes[p["spec"]["nodeName"]][level] for p in pods if p["spec"].get("nodeName")}


def placement(pods: Objects, nodes: dict[str, tuple[str, str]]) -> str:
    rows = []
    for key, p in sorted(pods.items()):
        labels = p["metadata"].get("labels") or {}
        node = p["spec"].get("nodeName")
        rows.append(
            f"- {key} group={labels.get(c.GROUP_INDEX_LABEL)} "
            f"subgroup={labels.get(c.SUBGROUP_INDEX_LABEL)} node={node} "
            f"domain={nodes.get(node or '', '-')} ready={pod_ready(p)} "
            f"unschedulable={unschedulable(p)}"
        )
    return "\n".join(rows) or "(no pods)"


async def test_one_group_per_rack_and_a_group_without_a_free_rack_waits_whole(
    kube: Kube, lws_namespace: str, node_pool: NodePool
) -> None:
    ns, name, size = lws_namespace, "racks", 3
    for _ in range(3):
        await node_pool.add_rack(nodes=2)
    nodes = await topology(kube, node_pool)
    body = exclusive_lws(
        name, node_pool, replicas=4, size=size, annotations={c.EXCLUSIVE_KEY_ANNOTATION: RACK_LABEL}
    )
    await kube.create(lws_path(ns), body)

    def three_placed_one_waiting(pods: Objects) -> bool:
        groups = by_group(pods).values()
        complete = [g for g in groups if len(g) == size and all(map(pod_ready, g))]
        waiting = [g for g in groups if any(unschedulable(p) for p in g)]
        return len(complete) == 3 and len(waiting) == 1

    try:
        pods = await wait_pods(
            kube, ns, name, three_placed_one_waiting, "3 groups placed, 1 waiting"
        )
    except TimeoutError as e:
        raise AssertionError(f"{e}\n{placement(await pods_of(kube, ns, name), nodes)}") from None
    groups = by_group(pods)
    placed = {i: g for i, g in groups.items() if all(map(pod_ready, g))}
    racks = {i: domains(g, nodes, 1) for i, g in placed.items()}
    assert all(len(r) == 1 for r in racks.values()), placement(pods, nodes)
    assert len(set.union(*racks.values())) == 3, f"groups share a rack:\n{placement(pods, nodes)}"
    ((waiting_index, waiting),) = [(i, g) for i, g in groups.items() if i not in placed]
    # the waiting group is only its leader: workers follow a leader that has a rack
    assert [p["metadata"]["name"] for p in waiting] == [f"{name}-{waiting_index}"]
    assert not waiting[0]["spec"].get("nodeName")
    sts = await list_of(kube, "apps/v1", "statefulsets", ns, name)
    assert f"{name}-{waiting_index}" not in sts

    # a free rack lets it in, whole
    new_rack = await node_pool.add_rack(nodes=2)
    nodes = await topology(kube, node_pool)
    await wait_lws(kube, ns, name, lambda o: is_available(o, 4), "Available with 4 groups")
    pods = await pods_of(kube, ns, name)
    group = by_group(pods)[waiting_index]
    assert len(group) == size and domains(group, nodes, 1) == {new_rack}, placement(pods, nodes)


async def test_one_subgroup_per_rack_and_a_subgroup_without_a_free_rack_waits_whole(
    kube: Kube, lws_namespace: str, node_pool: NodePool
) -> None:
    ns, name = lws_namespace, "subracks"
    for _ in range(3):
        await node_pool.add_rack(nodes=1)
    nodes = await topology(kube, node_pool)
    body = exclusive_lws(
        name,
        node_pool,
        replicas=2,
        size=4,
        annotations={c.SUBGROUP_EXCLUSIVE_KEY_ANNOTATION: RACK_LABEL},
    )
    body["spec"]["leaderWorkerTemplate"]["subGroupPolicy"] = {"subGroupSize": 2}
    await kube.create(lws_path(ns), body)

    def three_placed_one_waiting(pods: Objects) -> bool:
        subgroups = by_subgroup(pods).values()
        complete = [s for s in subgroups if len(s) == 2 and all(map(pod_ready, s))]
        waiting = [s for s in subgroups if len(s) == 2 and all(map(unschedulable, s))]
        return len(pods) == 8 and len(complete) == 3 and len(waiting) == 1

    try:
        pods = await wait_pods(
            kube, ns, name, three_placed_one_waiting, "3 subgroups placed, 1 waiting whole"
        )
    except TimeoutError as e:
        raise AssertionError(f"{e}\n{placement(await pods_of(kube, ns, name), nodes)}") from None
    subgroups = by_subgroup(pods)
    placed = [s for s in subgroups.values() if all(map(pod_ready, s))]
    racks = [domains(s, nodes, 1) for s in placed]
    assert all(len(r) == 1 for r in racks), placement(pods, nodes)
    assert len(set.union(*racks)) == 3, f"subgroups share a rack:\n{placement(pods, nodes)}"
    (waiting,) = [s for s in subgroups.values() if s not in placed]
    assert not any(p["spec"].get("nodeName") for p in waiting), placement(pods, nodes)


async def test_groups_per_zone_and_subgroups_per_rack_at_once(
    kube: Kube, lws_namespace: str, node_pool: NodePool
) -> None:
    ns, name = lws_namespace, "nested"
    for zone in (0, 0, 1, 1):
        await node_pool.add_rack(nodes=1, zone=zone)
    nodes = await topology(kube, node_pool)
    body = exclusive_lws(
        name,
        node_pool,
        replicas=2,
        size=4,
        annotations={
            c.EXCLUSIVE_KEY_ANNOTATION: ZONE_LABEL,
            c.SUBGROUP_EXCLUSIVE_KEY_ANNOTATION: RACK_LABEL,
        },
    )
    body["spec"]["leaderWorkerTemplate"]["subGroupPolicy"] = {"subGroupSize": 2}
    await kube.create(lws_path(ns), body)
    try:
        await wait_lws(kube, ns, name, lambda o: is_available(o, 2), "Available with 2 groups")
    finally:
        pods = await pods_of(kube, ns, name)
    shown = placement(pods, nodes)
    zones = [domains(g, nodes, 0) for g in by_group(pods).values()]
    assert all(len(z) == 1 for z in zones) and len(set.union(*zones)) == 2, shown
    racks = [domains(s, nodes, 1) for s in by_subgroup(pods).values()]
    assert len(racks) == 4 and all(len(r) == 1 for r in racks), shown
    assert len(set.union(*racks)) == 4, f"subgroups share a rack:\n{shown}"


def by_subgroup(pods: Objects) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for pod in pods.values():
        key = (pod["metadata"].get("labels") or {}).get(c.SUBGROUP_UNIQUE_HASH_LABEL, "?")
        out.setdefault(key, []).append(pod)
    return out


async def pods_of(kube: Kube, ns: str, name: str) -> Objects:
    listing = await kube.list(
        resource_path("v1", "pods", namespace=ns), label_selector=f"{c.SET_NAME_LABEL}={name}"
    )
    return {f"{ns}/{p['metadata']['name']}": p for p in listing["items"]}
