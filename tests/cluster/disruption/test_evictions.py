"""Evictions of LWS pods, step by step (the eviction API, as ``kubectl drain`` calls it): the
surge group is Ready before any pod of the old group goes, ``kubectl lws status`` and the LWS's
Events say what is being moved and why; without room for a surge the budget alone decides;
with the operator down, evictions of LWS pods are refused and no other pod is affected."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lws_operator.api import constants as c
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_operator.kubectl.lws import cmd_status
from lws_operator.plan.meta import is_deleting, pod_ready
from lws_testbed.local import LocalCluster
from lws_testbed.simulate import HOLD_READY_ANNOTATION, make_ready
from lws_testbed.wait import Objects
from tests.cluster.controller.helpers import (
    container,
    create_available,
    is_available,
    lws_body,
    wait_lws,
    wait_pods,
)
from tests.cluster.disruption.helpers import (
    Watcher,
    diagnostics,
    drain,
    evict,
    gpu_lws,
    pods_by_node,
)
from tests.cluster.scheduling.conftest import NodePool

pytestmark = pytest.mark.timeout(300)


def held_lws(name: str) -> dict[str, Any]:
    """Size 2, maxSurge 1, pods kwok leaves unready until the test says (hold-ready)."""
    body = lws_body(
        name,
        replicas=2,
        size=2,
        rolloutStrategy={
            "type": "RollingUpdate",
            "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": 1},
        },
    )
    for role in ("leaderTemplate", "workerTemplate"):
        body["spec"]["leaderWorkerTemplate"][role]["metadata"]["annotations"] = {
            HOLD_READY_ANNOTATION: "true"
        }
    return body


async def ready_group(kube: Kube, ns: str, name: str, index: int) -> dict[str, str]:
    """Wait until group ``index``'s pods exist and are scheduled; report them Ready; their uids."""
    members = {f"{name}-{index}", f"{name}-{index}-1"}

    def scheduled(objs: Objects) -> bool:
        pods = {p["metadata"]["name"]: p for p in objs.values() if not is_deleting(p)}
        return all((pods.get(m) or {}).get("spec", {}).get("nodeName") for m in members)

    objs = await wait_pods(kube, ns, name, scheduled, f"group {index} scheduled", timeout=60)
    uids = {}
    for pod in objs.values():
        if pod["metadata"]["name"] in members and not is_deleting(pod):
            uids[pod["metadata"]["name"]] = pod["metadata"]["uid"]
            if not pod_ready(pod):
                await make_ready(kube, ns, pod["metadata"]["name"])
    return uids


async def event_notes(kube: Kube, ns: str, name: str) -> list[tuple[str, str, str]]:
    listing = await kube.list(
        resource_path("events.k8s.io/v1", "events", namespace=ns),
        field_selector=f"regarding.name={name},regarding.kind={c.KIND}",
    )
    items = sorted(listing["items"], key=lambda e: e.get("eventTime") or "")
    return [(e["reason"], e["action"], e["note"]) for e in items]


async def test_surge_first_step_by_step(
    kube: Kube,
    lws_namespace: str,
    local_cluster: LocalCluster | None,
    pause_session_operator: Callable[[], contextlib.AbstractAsyncContextManager[None]],
) -> None:
    """One eviction, each step held until the test makes pods Ready: the surge group first,
    the operator restarted mid-move (the move lives on the leader StatefulSet), the old group
    released whole, the drain's retry by name answered 404, the surge given back; what
    kubectl lws status and the Events say on the way."""
    if local_cluster is None:
        pytest.skip("needs kwok's hold-ready stage")
    ns, name = lws_namespace, "steps"
    await kube.create(resource_path(c.API_VERSION, c.PLURAL, namespace=ns), held_lws(name))
    old = {}
    for index in (0, 1):
        old |= await ready_group(kube, ns, name, index)
    await wait_lws(kube, ns, name, lambda o: is_available(o, 2), "Available")

    refused = await evict(kube, ns, f"{name}-1-1")
    assert refused is not None and refused.status == 429, refused
    assert f"group 1 of {name} is being replaced" in refused.message and "retry" in refused.message

    # The surge group comes first; nothing of group 1 is touched meanwhile.
    def surge_scheduled(objs: Objects) -> bool:
        return all(
            (objs.get(f"{ns}/{name}-2{w}") or {}).get("spec", {}).get("nodeName")
            for w in ("", "-1")
        )

    pods = await wait_pods(kube, ns, name, surge_scheduled, "surge group 2 scheduled")
    live = {p["metadata"]["name"]: p for p in pods.values()}
    for pod_name, uid in old.items():
        assert live[pod_name]["metadata"]["uid"] == uid and not is_deleting(live[pod_name])
    status = await cmd_status(kube, ns, name)
    assert "groups being moved (disruption budget 1 from maxUnavailable):" in status, status
    assert "group 1: surging for" in status and f"waiting for surge group {name}-2" in status
    again = await evict(kube, ns, f"{name}-1")
    assert again is not None and again.status == 429 and "waiting for surge group" in again.message
    async with pause_session_operator():
        pass  # stopped and started again: it resumes the move from the cluster

    # Ready: group 1 is released whole, then rebuilt under its own names.
    await ready_group(kube, ns, name, 2)

    group1 = {old[f"{name}-1"], old[f"{name}-1-1"]}

    def released(objs: Objects) -> bool:
        uids = {p["metadata"]["uid"]: p for p in objs.values()}
        return all(u not in uids or is_deleting(uids[u]) for u in group1)

    await wait_pods(kube, ns, name, released, "group 1 released whole")
    status = await cmd_status(kube, ns, name)
    assert "group 1: released for" in status and "being rebuilt" in status, status
    new = await ready_group(kube, ns, name, 1)
    assert set(new.values()).isdisjoint(old.values())

    # kubectl drain's retry by name lands on the rebuilt pod: "not found", nothing touched.
    gone = await evict(kube, ns, f"{name}-1-1")
    assert gone is not None and gone.status == 404, gone
    assert "was released with group 1" in gone.message

    lws = await wait_lws(
        kube,
        ns,
        name,
        lambda o: is_available(o, 2) and o["status"].get("replicas") == 2,
        "surge given back",
    )
    assert lws["status"]["readyReplicas"] == 2
    notes = await event_notes(kube, ns, name)
    moves = [(r, a) for r, a, _ in notes if r in ("MovingGroup", "MovedGroup")]
    assert moves == [("MovingGroup", "Create"), ("MovingGroup", "Delete"), ("MovedGroup", "Update")]
    assert any(f"surge group {name}-2, is Ready" in n for _, _, n in notes), notes
    assert "groups being moved" not in await cmd_status(kube, ns, name)


@pytest.mark.parametrize("max_surge", [1, 0], ids=["no-capacity", "max-surge-0"])
async def test_without_surge_the_budget_alone(
    kube: Kube,
    kubeconfig: Path,
    lws_namespace: str,
    node_pool: NodePool,
    max_surge: int,
) -> None:
    """Four pods of 4 GPUs: three fill a node of 8 and a node of 4 GPUs, the fourth lands on a
    third node of 8 added then. The small node, drained, holds one pod; the others leave room
    for one more pod but not for a surge group of two. Its group is released without a surge,
    never more than B = 1 group down, and rebuilt in the room it freed."""
    ns, name = lws_namespace, "tight"
    await node_pool.add_rack(1)
    small = await node_pool.add_rack(1, gpus=4)
    await kube.create(
        resource_path(c.API_VERSION, c.PLURAL, namespace=ns),
        gpu_lws(name, node_pool, replicas=2, max_surge=max_surge, gpus=4),
    )
    await wait_pods(
        kube,
        ns,
        name,
        lambda objs: (
            sum(bool(p["spec"].get("nodeName")) for p in objs.values()) == 3 and len(objs) == 4
        ),
        "three of four pods placed",
    )
    await node_pool.add_rack(1)
    await wait_lws(kube, ns, name, lambda o: is_available(o, 2), "Available")
    (node,) = [n for n in node_pool.nodes if n.startswith(f"{node_pool.name}-r1")]
    assert small.endswith("rack-1")
    assert len((await pods_by_node(kube, ns, name)).get(node, [])) == 1
    watcher = Watcher(kube, ns, name, 2)
    async with watcher.watching(floor=1):
        drained = await drain(kubeconfig, node)
        try:
            await wait_lws(kube, ns, name, lambda o: is_available(o, 2), "Available again", 90)
        except TimeoutError as e:
            raise AssertionError(f"{e}\n{await diagnostics(kube, ns, name)}") from e
    assert watcher.low == [] and watcher.min_available == 1, watcher.low[:2]
    events = await event_notes(kube, ns, name)
    assert [r.surge_ready for r in watcher.releases] == [False], (
        f"{watcher.releases}\nkubectl drain:\n{drained}\nevents:\n"
        + "\n".join(" ".join(e) for e in events)
    )
    notes = [n for r, _, n in events if r == "MovingGroup"]
    want = "no surge possible" if max_surge else "without a replacement: maxSurge is 0"
    assert any(want in n for n in notes), notes
    assert node not in await pods_by_node(kube, ns, name)


async def test_webhook_down_refuses_lws_evictions_only(
    kube: Kube,
    lws_namespace: str,
    pause_session_operator: Callable[[], contextlib.AbstractAsyncContextManager[None]],
) -> None:
    ns, name = lws_namespace, "down"
    await create_available(kube, ns, lws_body(name, replicas=1, size=2))
    pods = resource_path("v1", "pods", namespace=ns)
    await kube.create(
        pods,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "plain"},
            "spec": {"containers": [container("c")]},
        },
    )
    await wait_pods(kube, ns, name, lambda objs: len(objs) == 2, "both pods")
    async with pause_session_operator():
        refused = await evict(kube, ns, f"{name}-0-1")
        assert refused is not None and "failed calling webhook" in refused.message, refused
        assert await evict(kube, ns, "plain") is None
    lws_pods = await wait_pods(kube, ns, name, lambda objs: len(objs) == 2, "both pods")
    assert all(not is_deleting(p) for p in lws_pods.values())
