"""Restart policies: a failure anywhere in a group recreates the whole group (every pod new),
and no other group; with None only the failed pod is replaced."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from lws_operator.api import constants as c
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_testbed.simulate import fail_pod, restart_container
from lws_testbed.wait import Objects, wait_for_objects
from tests.cluster.controller.conftest import AddNode
from tests.cluster.controller.helpers import (
    container,
    create_available,
    is_available,
    list_of,
    lws_body,
    lws_path,
    wait_lws,
    wait_pods,
)


def uids(pods: dict[str, dict[str, Any]], group: int, name: str) -> dict[str, str]:
    """Pod name → UID of the pods of one group."""
    return {
        n: p["metadata"]["uid"]
        for n, p in pods.items()
        if p["metadata"]["labels"].get(c.GROUP_INDEX_LABEL) == str(group)
    }


async def snapshot(kube: Kube, ns: str, name: str) -> dict[str, dict[str, Any]]:
    return await list_of(kube, "v1", "pods", ns, name)


async def wait_group_replaced(
    kube: Kube, ns: str, name: str, group: int, old: dict[str, str], size: int
) -> None:
    """Every pod of ``group`` exists again, Running and Ready, and none is an old one."""

    def replaced(objs: Objects) -> bool:
        mine = [
            p
            for p in objs.values()
            if p["metadata"]["labels"].get(c.GROUP_INDEX_LABEL) == str(group)
            and not p["metadata"].get("deletionTimestamp")
        ]
        return (
            len(mine) == size
            and not {p["metadata"]["uid"] for p in mine} & set(old.values())
            and all(
                any(
                    x.get("type") == "Ready" and x.get("status") == "True"
                    for x in (p.get("status") or {}).get("conditions") or []
                )
                for p in mine
            )
        )

    await wait_pods(kube, ns, name, replaced, f"group {group} recreated with all-new pods")
    await wait_lws(kube, ns, name, lambda o: is_available(o), "Available again")


async def recreation_events(kube: Kube, ns: str, lws_uid: str, count: int) -> list[str]:
    events = await wait_for_objects(
        kube,
        resource_path("events.k8s.io/v1", "events", namespace=ns),
        lambda objs: sum(e.get("reason") == "RecreateGroup" for e in objs.values()) >= count,
        timeout=30,
        what="RecreateGroup events",
        field_selector=f"regarding.uid={lws_uid}",
    )
    return sorted(e["note"] for e in events.values() if e.get("reason") == "RecreateGroup")


Breaker = Callable[[Kube, str, str], Awaitable[Any]]


async def delete_pod(kube: Kube, ns: str, pod: str) -> None:
    await kube.delete(resource_path("v1", "pods", namespace=ns, name=pod))


@pytest.mark.parametrize(
    ("victim", "breaker", "culprit_role"),
    [
        ("grp-1-2", restart_container, "Worker"),
        ("grp-1-1", delete_pod, "Worker"),
        ("grp-1-2", fail_pod, "Worker"),
        ("grp-1", delete_pod, "Leader"),
        ("grp-1", restart_container, "Leader"),
    ],
    ids=["worker-restart", "worker-deleted", "worker-failed", "leader-deleted", "leader-restart"],
)
async def test_a_failure_recreates_exactly_its_group(
    kube: Kube, lws_namespace: str, victim: str, breaker: Breaker, culprit_role: str
) -> None:
    ns, name = lws_namespace, "grp"
    lws = await create_available(kube, ns, lws_body(name, replicas=2, size=3))
    before = await snapshot(kube, ns, name)
    group0, group1 = uids(before, 0, name), uids(before, 1, name)

    await breaker(kube, ns, victim)
    await wait_group_replaced(kube, ns, name, 1, group1, size=3)

    after = await snapshot(kube, ns, name)
    assert uids(after, 0, name) == group0, "another group's pods must not change"
    if not (culprit_role == "Leader" and breaker is delete_pod):
        # (deleting the leader itself recreates the group through its StatefulSet)
        (note,) = await recreation_events(kube, ns, lws["metadata"]["uid"], 1)
        assert note == (
            f"{culprit_role} pod {victim} failed, deleted leader pod {name}-1 to recreate group 1"
        )


async def wait_reconciled_after(kube: Kube, ns: str, name: str) -> None:
    """Evidence the operator has processed what happened so far: bump the generation (a label
    in the template would roll; a rollout-strategy field does not) and wait until the status
    reports that generation."""
    lws = await kube.get(lws_path(ns, name))
    cfg = lws["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"]
    bumped = cfg["maxSurge"] + 1 if isinstance(cfg["maxSurge"], int) else 1
    await kube.patch(
        lws_path(ns, name),
        {"spec": {"rolloutStrategy": {"rollingUpdateConfiguration": {"maxSurge": bumped}}}},
    )
    generation = (await kube.get(lws_path(ns, name)))["metadata"]["generation"]
    await wait_lws(
        kube,
        ns,
        name,
        lambda o: (o.get("status") or {}).get("observedGeneration") == generation,
        f"status of generation {generation}",
    )


async def test_none_replaces_only_the_failed_pod(kube: Kube, lws_namespace: str) -> None:
    ns, name = lws_namespace, "solo"
    body = lws_body(name, replicas=1, size=3)
    body["spec"]["leaderWorkerTemplate"]["restartPolicy"] = "None"
    await create_available(kube, ns, body)
    before = await snapshot(kube, ns, name)

    await restart_container(kube, ns, f"{name}-0-1")
    await delete_pod(kube, ns, f"{name}-0-2")
    await wait_pods(
        kube,
        ns,
        name,
        lambda objs: (
            (p := objs.get(f"{ns}/{name}-0-2")) is not None
            and p["metadata"]["uid"] != before[f"{name}-0-2"]["metadata"]["uid"]
        ),
        "the deleted worker recreated by its StatefulSet",
    )
    await wait_reconciled_after(kube, ns, name)
    after = await snapshot(kube, ns, name)
    for pod in (f"{name}-0", f"{name}-0-1"):
        assert after[pod]["metadata"]["uid"] == before[pod]["metadata"]["uid"], pod
    statuses = after[f"{name}-0-1"]["status"]["containerStatuses"]
    assert statuses[0]["restartCount"] == 1


async def test_recreate_after_start_waits_while_a_pod_is_pending(
    kube: Kube, lws_namespace: str, add_big_node: AddNode
) -> None:
    ns, name = lws_namespace, "late"
    big = {"limits": {"nvidia.com/gpu": "16"}, "requests": {"nvidia.com/gpu": "16"}}
    body = lws_body(
        name,
        replicas=1,
        size=2,
        worker_spec={"containers": [container("worker", resources=big)]},
    )
    body["spec"]["leaderWorkerTemplate"]["restartPolicy"] = "RecreateGroupAfterStart"
    await kube.create(lws_path(ns), body)
    pending = await wait_pods(
        kube,
        ns,
        name,
        lambda objs: (
            f"{ns}/{name}-0" in objs
            and (objs[f"{ns}/{name}-0"].get("status") or {}).get("phase") == "Running"
            and (objs.get(f"{ns}/{name}-0-1") or {}).get("status", {}).get("phase") == "Pending"
        ),
        "leader running, worker Pending (no node fits it)",
    )
    leader_uid = pending[f"{ns}/{name}-0"]["metadata"]["uid"]
    await restart_container(kube, ns, f"{name}-0")
    await wait_reconciled_after(kube, ns, name)
    now = await snapshot(kube, ns, name)
    assert now[f"{name}-0"]["metadata"]["uid"] == leader_uid, "acted while a pod was Pending"

    await add_big_node()  # the worker starts: now the restart recreates the group
    await wait_group_replaced(kube, ns, name, 0, {"leader": leader_uid}, size=2)


async def test_recreate_after_start_forgets_a_deletion_seen_while_starting(
    kube: Kube, lws_namespace: str, add_big_node: AddNode
) -> None:
    """Parity (issue 12.2): a worker deleted while another is still Pending is skipped, as
    upstream skips the event in hand; once every pod runs, minutes later or at once, the group
    is not recreated for it. Each worker needs 24 of a big node's 32 GPUs: one runs, one waits."""
    ns, name = lws_namespace, "starting"
    big = {"limits": {"nvidia.com/gpu": "24"}, "requests": {"nvidia.com/gpu": "24"}}
    body = lws_body(
        name, replicas=1, size=3, worker_spec={"containers": [container("worker", resources=big)]}
    )
    body["spec"]["leaderWorkerTemplate"]["restartPolicy"] = "RecreateGroupAfterStart"
    lws = await kube.create(lws_path(ns), body)
    await add_big_node()

    def one_running_one_pending(objs: Objects) -> bool:
        phases = sorted(
            (objs.get(f"{ns}/{name}-0-{i}") or {}).get("status", {}).get("phase", "-")
            for i in (1, 2)
        )
        leader = (objs.get(f"{ns}/{name}-0") or {}).get("status", {}).get("phase")
        return leader == "Running" and phases == ["Pending", "Running"]

    pods = await wait_pods(kube, ns, name, one_running_one_pending, "one worker runs, one waits")
    running = next(
        n.split("/")[1]
        for n, p in pods.items()
        if n.split("/")[1] != f"{name}-0" and p["status"]["phase"] == "Running"
    )
    leader_uid = pods[f"{ns}/{name}-0"]["metadata"]["uid"]
    await delete_pod(kube, ns, running)
    await wait_pods(
        kube,
        ns,
        name,
        lambda objs: (
            one_running_one_pending(objs)
            or all(
                (objs.get(f"{ns}/{name}-0-{i}") or {}).get("status", {}).get("phase") == "Pending"
                for i in (1, 2)
            )
        ),
        "the deleted worker replaced, its group still starting",
    )
    await wait_reconciled_after(kube, ns, name)  # the deletion has been decided on
    await add_big_node()  # now both workers fit: the group completes
    await wait_lws(kube, ns, name, lambda o: is_available(o, 1), "Available")
    await wait_reconciled_after(kube, ns, name)
    now = await snapshot(kube, ns, name)
    assert now[f"{name}-0"]["metadata"]["uid"] == leader_uid, "the group was recreated later"
    listing = await kube.list(
        resource_path("events.k8s.io/v1", "events", namespace=ns),
        field_selector=f"regarding.uid={lws['metadata']['uid']}",
    )
    assert "RecreateGroup" not in [e["reason"] for e in listing["items"]]


async def test_a_rolling_update_recreates_no_group(kube: Kube, lws_namespace: str) -> None:
    """Under the default RecreateGroupOnPodRestart, the pods a rollout replaces are not
    failures: the update completes with no RecreateGroup event."""
    ns, name = lws_namespace, "roll"
    lws = await create_available(kube, ns, lws_body(name, replicas=3, size=3))
    patch = {
        "spec": {"leaderWorkerTemplate": {"workerTemplate": {"metadata": {"labels": {"v": "2"}}}}}
    }
    await kube.patch(lws_path(ns, name), patch)

    def updated(o: dict[str, Any]) -> bool:
        status = o.get("status") or {}
        return is_available(o, 3) and status.get("updatedReplicas") == 3

    await wait_lws(kube, ns, name, updated, "rolled out: Available with 3 updated groups")
    pods = await snapshot(kube, ns, name)
    key = (await kube.get(resource_path("apps/v1", "statefulsets", namespace=ns, name=name)))[
        "metadata"
    ]["labels"][c.REVISION_KEY]
    assert len(pods) == 9
    assert {p["metadata"]["labels"][c.REVISION_KEY] for p in pods.values()} == {key}
    workers = [p for p in pods.values() if p["metadata"]["labels"][c.WORKER_INDEX_LABEL] != "0"]
    assert all(p["metadata"]["labels"].get("v") == "2" for p in workers)
    listing = await kube.list(
        resource_path("events.k8s.io/v1", "events", namespace=ns),
        field_selector=f"regarding.uid={lws['metadata']['uid']}",
    )
    reasons = [e["reason"] for e in listing["items"]]
    assert "RecreateGroup" not in reasons
    assert "GroupsUpdating" in reasons
