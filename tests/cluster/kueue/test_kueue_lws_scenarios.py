"""Kueue v0.19.2's own LeaderWorkerSet scenarios (``test/e2e/singlecluster/extended/
leaderworkerset_test.go``), step for step, against the LWS controller under test (this
operator, or upstream's with ``LWS_TEST_KUEUE_CONTROLLER=upstream``): a ClusterQueue of 5 CPU
that preempts lower priorities, a LocalQueue, and LeaderWorkerSets of 200m pods."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from lws_operator.api import constants as c
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_operator.plan.lws.groups import labels_of
from lws_testbed import kueue
from lws_testbed.wait import Objects, follow_objects, wait_for_objects, wait_on
from tests.cluster.controller.helpers import (
    condition,
    lws_path,
    statefulset_max_unavailable_served,
    wait_lws,
)
from tests.cluster.kueue.helpers import (
    AGNHOST,
    AGNHOST_OLD,
    TIMEOUT,
    Queues,
    admitted,
    gated,
    holds_for,
    is_true,
    kueue_lws,
    queues,
    set_workload_active,
    short_pods,
    short_workloads,
    wait_admitted,
    wait_kueue_pods,
    wait_workloads,
)

LOWER_PRIORITY = {"withinClusterQueue": "LowerPriority"}
# make test runs the others (one case of each kind); make test-kueue runs all.
FULL = pytest.mark.kueue_full
STARTUP_POLICIES = ["LeaderCreated", "LeaderReady"]


@pytest.fixture
async def q(kube: Kube, namespace: str) -> Any:
    async with queues(kube, namespace, preemption=LOWER_PRIORITY) as made:
        yield made


def ready(lws: dict[str, Any], n: int) -> bool:
    """readyReplicas == n and Available True with reason AllGroupsReady."""
    cond = condition(lws, c.CONDITION_AVAILABLE) or {}
    return (lws.get("status") or {}).get("readyReplicas", 0) == n and (
        cond.get("status"),
        cond.get("reason"),
    ) == ("True", "AllGroupsReady")


async def create(kube: Kube, ns: str, body: dict[str, Any]) -> dict[str, Any]:
    created: dict[str, Any] = await kube.create(lws_path(ns), body)
    return created


async def wait_ready(kube: Kube, ns: str, name: str, n: int, timeout: float = TIMEOUT) -> None:
    await wait_lws(kube, ns, name, lambda o: ready(o, n), f"{n} groups ready", timeout=timeout)


async def set_replicas(kube: Kube, ns: str, name: str, n: int) -> None:
    await kube.patch(lws_path(ns, name), {"spec": {"replicas": n}})


async def delete_and_check_cleanup(kube: Kube, ns: str, lws: dict[str, Any]) -> None:
    """Delete the LWS; its pods and Workloads must go (Kueue's last steps of each case)."""
    name, uid = lws["metadata"]["name"], lws["metadata"]["uid"]
    await kube.delete(lws_path(ns, name))
    await wait_for_objects(
        kube,
        lws_path(ns),
        lambda objs: f"{ns}/{name}" not in objs,
        timeout=TIMEOUT,
        what=f"LeaderWorkerSet {name} deleted",
    )
    await wait_kueue_pods(kube, ns, name, lambda pods: not pods, "all deleted")
    await wait_workloads(kube, ns, uid, lambda wls: not wls, "all deleted")


async def workloads(kube: Kube, ns: str, uid: str, n: int) -> dict[int, dict[str, Any]]:
    """The LWS's Workloads once there is exactly one per group 0..n-1."""
    return await wait_workloads(
        kube, ns, uid, lambda wls: sorted(wls) == list(range(n)), f"one per group 0..{n - 1}"
    )


# ---- "LeaderWorkerSet created" ---------------------------------------------------------------
@FULL
async def test_admits_group_with_leader_only(kube: Kube, namespace: str, q: Queues) -> None:
    lws = await create(kube, namespace, kueue_lws("lws", queue=q.local_queue, size=1))
    await wait_ready(kube, namespace, "lws", 1)
    wls = await workloads(kube, namespace, lws["metadata"]["uid"], 1)
    assert labels_of(wls[0]).get(kueue.JOB_UID_LABEL) == lws["metadata"]["uid"]
    await delete_and_check_cleanup(kube, namespace, lws)


async def test_admits_group_with_leader_and_workers(kube: Kube, namespace: str, q: Queues) -> None:
    lws = await create(kube, namespace, kueue_lws("lws", queue=q.local_queue, size=3))
    await wait_ready(kube, namespace, "lws", 1)
    wls = await workloads(kube, namespace, lws["metadata"]["uid"], 1)
    pod_sets = {ps["name"]: ps["count"] for ps in wls[0]["spec"]["podSets"]}
    assert pod_sets == {"main": 3}, pod_sets
    await delete_and_check_cleanup(kube, namespace, lws)


async def test_admits_multiple_groups_that_fit(kube: Kube, namespace: str, q: Queues) -> None:
    lws = await create(kube, namespace, kueue_lws("lws", queue=q.local_queue, size=3, replicas=2))
    await wait_ready(kube, namespace, "lws", 2)
    await workloads(kube, namespace, lws["metadata"]["uid"], 2)
    await delete_and_check_cleanup(kube, namespace, lws)


@pytest.mark.parametrize("startup", STARTUP_POLICIES)
@pytest.mark.parametrize(
    ("start", "steps"),
    [(1, [2]), (2, [1]), (1, [2, 1])],
    ids=["scale-up", "scale-down", "scale-up-then-down-fast"],
)
@FULL
async def test_scale(
    kube: Kube, namespace: str, q: Queues, startup: str, start: int, steps: list[int]
) -> None:
    """Kueue's "should allow to scale up", "... scale down" and "... scale up, scale down
    fast": group 0's Workload stays; the Workloads follow the groups."""
    body = kueue_lws("lws", queue=q.local_queue, size=3, replicas=start, startup=startup)
    lws = await create(kube, namespace, body)
    uid = lws["metadata"]["uid"]
    await wait_ready(kube, namespace, "lws", start)
    first = (await workloads(kube, namespace, uid, start))[0]
    for replicas in steps:
        await set_replicas(kube, namespace, "lws", replicas)
    await wait_ready(kube, namespace, "lws", steps[-1])
    # Removed groups' Workloads released: deleted, or at least no longer owned.
    after = await workloads(kube, namespace, uid, steps[-1])
    assert after[0]["metadata"]["uid"] == first["metadata"]["uid"], "group 0's Workload replaced"
    await delete_and_check_cleanup(kube, namespace, lws)


@pytest.mark.parametrize("startup", STARTUP_POLICIES)
@FULL
async def test_groups_with_different_leader_and_worker_requests(
    kube: Kube, namespace: str, q: Queues, startup: str
) -> None:
    body = kueue_lws(
        "lws", queue=q.local_queue, size=3, replicas=2, leader_cpu="150m", startup=startup
    )
    lws = await create(kube, namespace, body)
    await wait_ready(kube, namespace, "lws", 2)
    wls = await workloads(kube, namespace, lws["metadata"]["uid"], 2)
    for wl in wls.values():
        counts = {ps["name"]: ps["count"] for ps in wl["spec"]["podSets"]}
        assert counts == {"leader": 1, "worker": 2}, counts
    await delete_and_check_cleanup(kube, namespace, lws)


@FULL
async def test_update_pod_template(kube: Kube, namespace: str, q: Queues) -> None:
    body = kueue_lws(
        "lws", queue=q.local_queue, size=2, replicas=2, leader_cpu="150m", image=AGNHOST_OLD
    )
    lws = await create(kube, namespace, body)
    uid = lws["metadata"]["uid"]
    await wait_ready(kube, namespace, "lws", 2)
    before = await workloads(kube, namespace, uid, 2)
    current = await kube.get(lws_path(namespace, "lws"))
    template = current["spec"]["leaderWorkerTemplate"]
    template["leaderTemplate"]["spec"]["containers"][0]["image"] = AGNHOST
    template["workerTemplate"]["spec"]["containers"][0]["image"] = AGNHOST
    await kube.replace(lws_path(namespace, "lws"), current)

    def replaced(pods: Objects) -> bool:
        return len(pods) == 4 and all(
            p["spec"]["containers"][0]["image"] == AGNHOST
            and not p["metadata"].get("deletionTimestamp")
            for p in pods.values()
        )

    await wait_kueue_pods(kube, namespace, "lws", replaced, "4, all on the new image", 180)
    await wait_ready(kube, namespace, "lws", 2)
    after = await workloads(kube, namespace, uid, 2)
    assert {i: w["metadata"]["uid"] for i, w in after.items()} == {
        i: w["metadata"]["uid"] for i, w in before.items()
    }, "a group's Workload was replaced by the template update"
    await delete_and_check_cleanup(kube, namespace, lws)


async def test_rolling_update_with_max_surge(kube: Kube, namespace: str, q: Queues) -> None:
    replicas, surge = 4, 2
    body = kueue_lws(
        "lws-rollout", queue=q.local_queue, size=1, replicas=replicas, image=AGNHOST_OLD
    )
    body["spec"]["rolloutStrategy"] = {
        "type": "RollingUpdate",
        "rollingUpdateConfiguration": {"maxUnavailable": 2, "maxSurge": surge},
    }
    lws = await create(kube, namespace, body)
    uid = lws["metadata"]["uid"]
    await wait_ready(kube, namespace, "lws-rollout", replicas)
    await workloads(kube, namespace, uid, replicas)
    patch = {
        "spec": {
            "leaderWorkerTemplate": {
                "workerTemplate": {
                    "spec": {
                        "containers": [
                            {
                                **body["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"][
                                    "containers"
                                ][0],
                                "image": AGNHOST,
                            }
                        ]
                    }
                }
            }
        }
    }
    # The surge groups (4 and 5) are created at some point, their pods seen by a watch that
    # starts before the change ...
    pods_path = resource_path("v1", "pods", namespace=namespace)
    selector = f"{c.SET_NAME_LABEL}=lws-rollout"
    surge_groups = set(range(replicas, replicas + surge))
    created: set[int] = set()

    def surge_pods_seen(pods: Objects) -> bool:
        created.update(int(labels_of(p).get(c.GROUP_INDEX_LABEL, "-1")) for p in pods.values())
        return surge_groups <= created

    async with contextlib.aclosing(
        follow_objects(kube, pods_path, label_selector=selector)
    ) as pods:
        await anext(pods)
        await kube.patch(lws_path(namespace, "lws-rollout"), patch)
        await wait_on(
            pods,
            surge_pods_seen,
            timeout=120,
            what="surge groups 4 and 5 created",
            summary=short_pods,
        )
    # ... and, where the StatefulSet controller replaces one leader at a time, so do their
    # Workloads. Where it honours the leader StatefulSet's maxUnavailable (U + M = 4 here; on
    # from Kubernetes 1.37) and pods are ready at once, as on simulated nodes, the old groups
    # are replaced within the budget and the surge is given back before Kueue has made the
    # surge groups' Workloads (their pods live for about 0.1 s): nothing is left to admit.
    if not await statefulset_max_unavailable_served(kube, namespace):
        seen: set[int] = set()

        def surge_seen(wls: dict[int, dict[str, Any]]) -> bool:
            seen.update(i for i in wls if i >= replicas)
            return seen == surge_groups

        await wait_workloads(kube, namespace, uid, surge_seen, "surge Workloads 4 and 5 seen", 120)
    # ... the rollout completes with every pod Running ...
    await wait_lws(
        kube,
        namespace,
        "lws-rollout",
        lambda o: ready(o, replicas) and o["status"].get("updatedReplicas") == replicas,
        f"{replicas} groups updated and ready",
        timeout=180,
    )
    await wait_kueue_pods(
        kube,
        namespace,
        "lws-rollout",
        lambda pods: (
            len(pods) == replicas
            and all(p.get("status", {}).get("phase") == "Running" for p in pods.values())
        ),
        f"{replicas} pods Running",
    )
    # ... and the surge Workloads are deleted.
    await wait_workloads(
        kube, namespace, uid, lambda wls: sorted(wls) == list(range(replicas)), "surge gone"
    )
    await kube.delete(lws_path(namespace, "lws-rollout"))


@FULL
async def test_queue_name_on_pod_templates_admit_and_evict(
    kube: Kube, namespace: str, q: Queues
) -> None:
    body = kueue_lws("lws", queue=q.local_queue, size=3)
    worker = body["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    worker["metadata"] = {"labels": {kueue.QUEUE_LABEL: "user-queue"}}
    lws = await create(kube, namespace, body)
    uid = lws["metadata"]["uid"]
    wl = await wait_admitted(kube, namespace, uid)
    await wait_ready(kube, namespace, "lws", 1)
    await set_workload_active(kube, wl, False)
    await wait_kueue_pods(
        kube,
        namespace,
        "lws",
        lambda pods: len(pods) == 3 and all(gated(p) for p in pods.values()),
        "3 pods, all gated after the eviction",
    )
    await delete_and_check_cleanup(kube, namespace, lws)


async def test_queue_name_change_while_no_group_is_ready(
    kube: Kube, namespace: str, q: Queues
) -> None:
    lws = await create(kube, namespace, kueue_lws("lws", queue=f"{q.local_queue}-invalid"))
    uid = lws["metadata"]["uid"]

    def inadmissible(wls: dict[int, dict[str, Any]]) -> bool:
        cond = condition(wls.get(0) or {}, "QuotaReserved") or {}
        return cond.get("status") == "False" and cond.get("reason") == "Inadmissible"

    await wait_workloads(kube, namespace, uid, inadmissible, "group 0's Workload inadmissible")
    current = await kube.get(lws_path(namespace, "lws"))
    assert (current.get("status") or {}).get("readyReplicas", 0) == 0
    await kube.patch(
        lws_path(namespace, "lws"), {"metadata": {"labels": {kueue.QUEUE_LABEL: q.local_queue}}}
    )
    await wait_admitted(kube, namespace, uid)
    await wait_lws(
        kube,
        namespace,
        "lws",
        lambda o: (o.get("status") or {}).get("readyReplicas") == 1,
        "1 group ready",
    )


# ---- "LeaderWorkerSet created with WorkloadPriorityClass" ------------------------------------
@pytest.fixture
async def priorities(kube: Kube, namespace: str) -> Any:
    names = {"high": f"high-{namespace}", "low": f"low-{namespace}"}
    for key, value in (("high", 5000), ("low", 1000)):
        await kube.create(
            kueue.path("workloadpriorityclasses"),
            kueue.workload_priority_class(names[key], value),
        )
    try:
        yield names
    finally:
        for name in names.values():
            await kube.delete(kueue.path("workloadpriorityclasses", name=name))


def with_priority(wl: dict[str, Any], name: str, value: int) -> bool:
    """Kueue's ExpectWorkloadsWithWorkloadPriority: the WorkloadPriorityClass and its value."""
    ref = wl["spec"].get("priorityClassRef") or {}
    return (ref.get("group"), ref.get("kind"), ref.get("name"), wl["spec"].get("priority")) == (
        kueue.GROUP,
        "WorkloadPriorityClass",
        name,
        value,
    )


def preempted_lws(lws: dict[str, Any]) -> bool:
    progressing = condition(lws, c.CONDITION_PROGRESSING) or {}
    available = condition(lws, c.CONDITION_AVAILABLE) or {}
    return (
        (lws.get("status") or {}).get("readyReplicas", 0) == 0
        and (progressing.get("status"), progressing.get("reason")) == ("True", "GroupsProgressing")
        and (available.get("status"), available.get("reason")) == ("False", "AllGroupsReady")
    )


async def running_low_priority(
    kube: Kube, ns: str, q: Queues, priorities: dict[str, str]
) -> dict[str, Any]:
    """Both priority cases start so: a low-priority LWS of 3 pods of 1 CPU, ready, its
    Workload admitted with the low WorkloadPriorityClass."""
    body = kueue_lws(
        "low-priority", queue=q.local_queue, size=3, cpu="1", priority_class=priorities["low"]
    )
    low = await create(kube, ns, body)
    await wait_ready(kube, ns, "low-priority", 1)
    wl = await wait_admitted(kube, ns, low["metadata"]["uid"])
    assert with_priority(wl, priorities["low"], 1000), wl["spec"]
    return low


async def test_higher_priority_preempts(
    kube: Kube, namespace: str, q: Queues, priorities: dict[str, str]
) -> None:
    low = await running_low_priority(kube, namespace, q, priorities)
    high = await create(
        kube,
        namespace,
        kueue_lws(
            "high-priority", queue=q.local_queue, size=3, cpu="1", priority_class=priorities["high"]
        ),
    )
    await wait_ready(kube, namespace, "high-priority", 1)
    await wait_lws(kube, namespace, "low-priority", preempted_lws, "preempted: 0 ready", 120)
    high_wl = await wait_admitted(kube, namespace, high["metadata"]["uid"])
    assert with_priority(high_wl, priorities["high"], 5000), high_wl["spec"]
    await wait_workloads(
        kube,
        namespace,
        low["metadata"]["uid"],
        lambda w: 0 in w and not admitted(w[0]) and is_true(w[0], "Preempted"),
        "low's Workload preempted",
    )


@FULL
async def test_priority_label_change_preempts(
    kube: Kube, namespace: str, q: Queues, priorities: dict[str, str]
) -> None:
    low = await running_low_priority(kube, namespace, q, priorities)
    other = await create(
        kube,
        namespace,
        kueue_lws(
            "updatable-priority",
            queue=q.local_queue,
            size=3,
            cpu="1",
            priority_class=priorities["low"],
        ),
    )
    other_uid = other["metadata"]["uid"]
    await wait_workloads(
        kube,
        namespace,
        other_uid,
        lambda w: 0 in w and with_priority(w[0], priorities["low"], 1000),
        "low priority, pending",
    )
    await kube.patch(
        lws_path(namespace, "updatable-priority"),
        {"metadata": {"labels": {kueue.PRIORITY_CLASS_LABEL: priorities["high"]}}},
    )
    await wait_workloads(
        kube,
        namespace,
        other_uid,
        lambda w: 0 in w and with_priority(w[0], priorities["high"], 5000),
        "priority updated to high",
    )
    await wait_workloads(
        kube,
        namespace,
        low["metadata"]["uid"],
        lambda w: 0 in w and is_true(w[0], "Preempted"),
        "low's Workload preempted",
    )
    await wait_lws(kube, namespace, "low-priority", preempted_lws, "preempted: 0 ready", 120)
    await wait_admitted(kube, namespace, other_uid)


# ---- "LeaderWorkerSet created with Restart Policy" -------------------------------------------
async def delete_one_worker(kube: Kube, ns: str) -> tuple[set[str], str, str]:
    """The pods' uids, and the name and uid of a deleted worker pod."""
    listing = await kube.list(
        resource_path("v1", "pods", namespace=ns), label_selector=f"{c.SET_NAME_LABEL}=lws"
    )
    pods = listing["items"]
    assert len(pods) == 3, [p["metadata"]["name"] for p in pods]
    worker = next(p for p in pods if labels_of(p).get(c.WORKER_INDEX_LABEL) != "0")
    await kube.delete(resource_path("v1", "pods", namespace=ns, name=worker["metadata"]["name"]))
    return (
        {p["metadata"]["uid"] for p in pods},
        worker["metadata"]["name"],
        worker["metadata"]["uid"],
    )


def all_running(pods: Objects, n: int) -> bool:
    return len(pods) == n and all(
        p.get("status", {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
        for p in pods.values()
    )


async def test_recreate_group_on_pod_restart(kube: Kube, namespace: str, q: Queues) -> None:
    await create(
        kube,
        namespace,
        kueue_lws("lws", queue=q.local_queue, size=3, restart_policy="RecreateGroupOnPodRestart"),
    )
    await wait_ready(kube, namespace, "lws", 1)
    original, _, _ = await delete_one_worker(kube, namespace)
    await wait_kueue_pods(
        kube,
        namespace,
        "lws",
        lambda pods: (
            all_running(pods, 3) and not original & {p["metadata"]["uid"] for p in pods.values()}
        ),
        "all 3 pods recreated with new uids and Running",
    )


@FULL
async def test_restart_policy_none_recreates_only_the_deleted_pod(
    kube: Kube, namespace: str, q: Queues
) -> None:
    await create(
        kube, namespace, kueue_lws("lws", queue=q.local_queue, size=3, restart_policy="None")
    )
    await wait_ready(kube, namespace, "lws", 1)
    original, deleted_name, deleted_uid = await delete_one_worker(kube, namespace)

    def only_that_one(pods: Objects) -> bool:
        uids = {p["metadata"]["uid"] for p in pods.values()}
        replacement = pods.get(f"{namespace}/{deleted_name}")
        return (
            all_running(pods, 3)
            and len(original & uids) == 2
            and replacement is not None
            and replacement["metadata"]["uid"] != deleted_uid
        )

    await wait_kueue_pods(kube, namespace, "lws", only_that_one, "only the deleted pod replaced")


# ---- "Workload deactivated" ------------------------------------------------------------------
async def test_deactivated_workload_is_kept_and_readmitted(
    kube: Kube, namespace: str, q: Queues
) -> None:
    lws = await create(kube, namespace, kueue_lws("lws", queue=q.local_queue, size=3))
    uid = lws["metadata"]["uid"]
    await wait_ready(kube, namespace, "lws", 1)
    wl = (await workloads(kube, namespace, uid, 1))[0]
    await set_workload_active(kube, wl, False)

    def not_ready(o: dict[str, Any]) -> bool:
        cond = condition(o, c.CONDITION_AVAILABLE) or {}
        return (o.get("status") or {}).get("readyReplicas", 0) == 0 and (
            cond.get("status"),
            cond.get("reason"),
        ) == ("False", "AllGroupsReady")

    await wait_lws(kube, namespace, "lws", not_ready, "0 ready, Available False")
    await wait_kueue_pods(
        kube,
        namespace,
        "lws",
        lambda pods: len(pods) == 3 and all(gated(p) for p in pods.values()),
        "3 pods, all gated",
    )
    key = f"{namespace}/{wl['metadata']['name']}"
    await holds_for(
        kube,
        kueue.path("workloads", namespace),
        lambda objs: (
            key in objs
            and objs[key]["metadata"]["uid"] == wl["metadata"]["uid"]
            and objs[key]["spec"].get("active") is False
        ),
        5,
        "the deactivated Workload kept, inactive",
    )
    await set_workload_active(kube, wl, True)
    await wait_ready(kube, namespace, "lws", 1)
    again = await wait_admitted(kube, namespace, uid)
    assert again["metadata"]["uid"] == wl["metadata"]["uid"], short_workloads({"again": again})
    await delete_and_check_cleanup(kube, namespace, lws)
