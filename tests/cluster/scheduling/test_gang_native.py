"""Native gang scheduling (``scheduling.k8s.io`` PodGroups: v1alpha2 in Kubernetes 1.36,
v1beta1 in 1.37, and the scheduler's gang plugin), for real: the operator runs with
``--gang-provider kubernetes`` for this module, in place of the session's. The PodGroups are
read in the version the operator picks from discovery; a cluster serving none skips the module
(``test_gang_unserved.py`` covers it).

The capacity test: 4 groups of 2 pods with 4 GPUs each, on 3 nodes of 8 GPUs, so 3 groups fit.
Without gangs the leaders (created first) would take 4 half-nodes and only 2 workers would fit:
two whole groups and two halves. With gangs, 3 groups run whole and the 4th has no pod bound
until a node is added.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import pytest

from lws_operator.api import constants as c
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_operator.plan.meta import labels_of, pod_ready
from lws_testbed.nodes import RACK_LABEL
from lws_testbed.operator_process import OperatorProcess
from lws_testbed.wait import Objects, wait_for_objects
from tests.cluster.controller.helpers import (
    create_available,
    is_available,
    lws_body,
    lws_path,
    wait_lws,
    wait_pods,
)
from tests.cluster.scheduling.conftest import (
    POOL_LABEL,
    NativeGangs,
    NodePool,
    by_group,
    gpu_pod_spec,
    unschedulable,
)


@pytest.fixture(scope="module")
def api(native_gangs: NativeGangs) -> str:
    """The PodGroup apiVersion the operator writes on this cluster."""
    if native_gangs.api is None:
        pytest.skip(native_gangs.unserved_reason())
    return native_gangs.api


@pytest.fixture(scope="module")
async def gang_operator(
    api: str,
    replace_session_operator: Callable[..., AbstractAsyncContextManager[OperatorProcess]],
) -> AsyncIterator[OperatorProcess]:
    async with replace_session_operator("--gang-provider", "kubernetes") as op:
        yield op


async def pod_groups(kube: Kube, api: str, ns: str, name: str) -> dict[str, dict[str, Any]]:
    listing = await kube.list(
        resource_path(api, "podgroups", namespace=ns), label_selector=f"{c.SET_NAME_LABEL}={name}"
    )
    return {g["metadata"]["name"]: g for g in listing["items"]}


def gang_state(pods: Objects) -> str:
    rows = []
    for key, p in sorted(pods.items()):
        group = (p["spec"].get("schedulingGroup") or {}).get("podGroupName")
        rows.append(
            f"- {key} podGroup={group} node={p['spec'].get('nodeName')} ready={pod_ready(p)} "
            f"unschedulable={unschedulable(p)}"
        )
    return "\n".join(rows) or "(no pods)"


async def test_three_of_four_gangs_fit_the_fourth_waits_whole_until_capacity_is_added(
    kube: Kube, namespace: str, api: str, gang_operator: OperatorProcess, node_pool: NodePool
) -> None:
    ns, name, size = namespace, "gang", 2
    await node_pool.add_rack(nodes=3)
    body = lws_body(
        name,
        replicas=4,
        size=size,
        leader_spec=gpu_pod_spec("leader", 4, node_pool),
        worker_spec=gpu_pod_spec("worker", 4, node_pool),
    )
    await kube.create(lws_path(ns), body)

    def three_run_one_waits(pods: Objects) -> bool:
        groups = list(by_group(pods).values())
        running = [g for g in groups if len(g) == size and all(map(pod_ready, g))]
        waiting = [g for g in groups if len(g) == size and all(map(unschedulable, g))]
        return len(running) == 3 and len(waiting) == 1

    try:
        pods = await wait_pods(kube, ns, name, three_run_one_waits, "3 gangs run, 1 waits")
    except TimeoutError as e:
        raise AssertionError(f"{e}\n{gang_state(await pods_of(kube, ns, name))}") from None
    shown = gang_state(pods)
    bound = {i: [bool(p["spec"].get("nodeName")) for p in g] for i, g in by_group(pods).items()}
    assert sorted(map(sum, bound.values())) == [0, 2, 2, 2], f"a partial group:\n{shown}"

    groups = await pod_groups(kube, api, ns, name)
    leaders = {
        p["metadata"]["name"]: p for p in pods.values() if p["metadata"]["name"].count("-") == 1
    }
    assert len(groups) == 4, sorted(groups)
    for leader_name, leader in leaders.items():
        labels = labels_of(leader)
        group_name = f"{leader_name}-{labels[c.REVISION_KEY]}"
        group = groups[group_name]
        assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": size}}
        assert labels_of(group) == {
            c.SET_NAME_LABEL: name,
            c.GROUP_INDEX_LABEL: labels[c.GROUP_INDEX_LABEL],
            c.REVISION_KEY: labels[c.REVISION_KEY],
        }
        (owner,) = group["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
            "Pod",
            leader_name,
            leader["metadata"]["uid"],
            True,
        )
    for pod in pods.values():
        index = labels_of(pod)[c.GROUP_INDEX_LABEL]
        want = f"{name}-{index}-{labels_of(pod)[c.REVISION_KEY]}"
        assert pod["spec"]["schedulingGroup"] == {"podGroupName": want}

    await node_pool.add_rack(nodes=1)
    await wait_lws(kube, ns, name, lambda o: is_available(o, 4), "Available with 4 groups")


async def test_exclusive_placement_under_gangs(
    kube: Kube, namespace: str, gang_operator: OperatorProcess, node_pool: NodePool
) -> None:
    """A gang's leader is scheduled only with its workers, so the workers cannot wait for the
    leader's rack (upstream's nodeSelector, which would deadlock): they follow it by affinity,
    and each gang lands whole in a rack of its own."""
    ns, name, size = namespace, "racked", 3
    for _ in range(2):
        await node_pool.add_rack(nodes=2)
    body = lws_body(
        name,
        replicas=2,
        size=size,
        annotations={c.EXCLUSIVE_KEY_ANNOTATION: RACK_LABEL},
        leader_spec=gpu_pod_spec("leader", 4, node_pool),
        worker_spec=gpu_pod_spec("worker", 4, node_pool),
    )
    try:
        await create_available(kube, ns, body)
    finally:
        pods = await pods_of(kube, ns, name)
    nodes = await kube.list(
        resource_path("v1", "nodes"), label_selector=f"{POOL_LABEL}={node_pool.name}"
    )
    rack_of = {n["metadata"]["name"]: n["metadata"]["labels"][RACK_LABEL] for n in nodes["items"]}
    racks = [{rack_of[p["spec"]["nodeName"]] for p in g} for g in by_group(pods).values()]
    assert all(len(r) == 1 for r in racks) and len(set.union(*racks)) == 2, gang_state(pods)
    worker_sts = await kube.get(
        resource_path("apps/v1", "statefulsets", namespace=ns, name=f"{name}-0")
    )
    pod_spec = worker_sts["spec"]["template"]["spec"]
    assert pod_spec["nodeSelector"] == node_pool.selector  # no rack pinned: affinity instead
    (term,) = pod_spec["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == RACK_LABEL


async def test_leader_ready_gangs_of_one_new_revisions_and_cleanup(
    kube: Kube, namespace: str, api: str, gang_operator: OperatorProcess
) -> None:
    ns = namespace
    await create_available(kube, ns, lws_body("ready", replicas=1, size=3, startup="LeaderReady"))
    await create_available(kube, ns, lws_body("single", replicas=2, size=1))
    (ready,) = (await pod_groups(kube, api, ns, "ready")).values()
    assert ready["spec"]["schedulingPolicy"] == {"gang": {"minCount": 1}}
    single = await pod_groups(kube, api, ns, "single")
    assert len(single) == 2
    assert all(g["spec"]["schedulingPolicy"] == {"gang": {"minCount": 1}} for g in single.values())

    # a new revision gets new PodGroups; the old ones go with their leader pods
    patch = {
        "spec": {"leaderWorkerTemplate": {"workerTemplate": {"metadata": {"labels": {"v": "2"}}}}}
    }
    await kube.patch(lws_path(ns, "single"), patch)
    lws = await wait_lws(
        kube,
        ns,
        "single",
        lambda o: is_available(o, 2) and o["status"].get("updatedReplicas") == 2,
        "rolled",
    )
    sts = await kube.get(resource_path("apps/v1", "statefulsets", namespace=ns, name="single"))
    key = labels_of(sts)[c.REVISION_KEY]
    want = {f"{ns}/single-{i}-{key}" for i in range(2)}
    await wait_for_objects(
        kube,
        resource_path(api, "podgroups", namespace=ns),
        lambda objs: set(objs) == want,
        timeout=60,
        what=f"only the new revision's PodGroups {sorted(want)} (status {lws.get('status')})",
        label_selector=f"{c.SET_NAME_LABEL}=single",
    )

    for name in ("ready", "single"):
        await kube.delete(lws_path(ns, name))
    await wait_for_objects(
        kube,
        resource_path(api, "podgroups", namespace=ns),
        lambda objs: not objs,
        timeout=60,
        what="every PodGroup garbage-collected with its LeaderWorkerSet",
    )


async def pods_of(kube: Kube, ns: str, name: str) -> Objects:
    listing = await kube.list(
        resource_path("v1", "pods", namespace=ns), label_selector=f"{c.SET_NAME_LABEL}={name}"
    )
    return {f"{ns}/{p['metadata']['name']}": p for p in listing["items"]}
