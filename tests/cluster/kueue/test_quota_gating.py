"""Kueue's GPU quota is never bypassed by a pod the LWS controller makes: through create, scale,
a rollout with surge and group recreation, every pod is created with Kueue's admission gate and
loses it only while its group's Workload is admitted and not being evicted
(``gating.check_never_bypassed``, over
every version of every pod, Workload and StatefulSet recorded by watches).

Kueue ungates at once, without a quota check, an LWS pod whose controlling StatefulSet is not
labelled ``leaderworkerset.sigs.k8s.io/name=<lws>``, and a pod of the old revision while its
StatefulSet is mid-update (``pkg/util/statefulset``): the recording also checks that every
pod's StatefulSet carried the label when the pod was made.

Each group asks for 16 GPUs (2 pods of 8; cpu is covered too, as a ClusterQueue must cover
every requested resource); the ClusterQueue's GPU quota decides how many groups run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from lws_operator.api import constants as c
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_testbed import kueue, simulate
from lws_testbed.wait import Objects
from tests.cluster.controller.helpers import lws_path, wait_lws
from tests.cluster.kueue.gating import check_never_bypassed, recording
from tests.cluster.kueue.helpers import (
    AGNHOST,
    AGNHOST_OLD,
    Queues,
    admitted,
    gated,
    holds_for,
    kueue_lws,
    queues,
    set_workload_active,
    short_pods,
    wait_kueue_pods,
    wait_workloads,
    workloads_of,
)

GPUS_PER_POD = 8
GROUP_GPUS = 2 * GPUS_PER_POD
HOLD = 3  # seconds a pending group must stay gated (watched)


def gpu_lws(
    name: str, queue: str, replicas: int, gpus: int = GPUS_PER_POD, **spec: Any
) -> dict[str, Any]:
    body = kueue_lws(name, queue=queue, size=2, replicas=replicas, image=AGNHOST_OLD, cpu="1")
    container = body["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    for part in ("requests", "limits"):
        container["resources"][part]["nvidia.com/gpu"] = gpus
    body["spec"].update(spec)
    return body


async def set_gpu_quota(kube: Kube, q: Queues, gpus: int) -> None:
    cq = await kube.get(kueue.path("clusterqueues", name=q.cluster_queue))
    for res in cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]:
        if res["name"] == "nvidia.com/gpu":
            res["nominalQuota"] = gpus
    await kube.replace(kueue.path("clusterqueues", name=q.cluster_queue), cq)


@pytest.fixture
async def gpu_queues(kube: Kube, namespace: str) -> AsyncIterator[Queues]:
    async with queues(kube, namespace, {"cpu": 64, "nvidia.com/gpu": GROUP_GPUS}) as q:
        yield q


def group_pods(pods: Objects, group: int) -> list[dict[str, Any]]:
    return [
        p
        for p in pods.values()
        if (p["metadata"].get("labels") or {}).get(c.GROUP_INDEX_LABEL) == str(group)
        and not p["metadata"].get("deletionTimestamp")
    ]


def group_gated(pods: Objects, group: int) -> bool:
    members = group_pods(pods, group)
    return len(members) == 2 and all(gated(p) for p in members)


def group_running(pods: Objects, group: int) -> bool:
    members = group_pods(pods, group)
    return len(members) == 2 and all(
        not gated(p) and p.get("status", {}).get("phase") == "Running" for p in members
    )


def pending(wl: dict[str, Any] | None) -> bool:
    conds = {x["type"]: x for x in ((wl or {}).get("status") or {}).get("conditions") or []}
    quota = conds.get("QuotaReserved") or {}
    return wl is not None and quota.get("status") == "False" and not admitted(wl)


async def stays_gated(kube: Kube, ns: str, name: str, group: int) -> None:
    """For a while, every pod of the group there (being made again, maybe) is gated."""

    def all_gated(pods: Objects) -> bool:
        mine = {k: p for k, p in pods.items() if p["metadata"]["name"].startswith(name)}
        members = group_pods(mine, group)
        return bool(members) and all(gated(p) for p in members)

    await holds_for(
        kube,
        resource_path("v1", "pods", namespace=ns),
        all_gated,
        HOLD,
        f"group {group} of {name} gated",
        summary=short_pods,
    )


async def test_create_admits_what_fits_the_rest_waits(
    kube: Kube, namespace: str, gpu_queues: Queues
) -> None:
    async with recording(kube, namespace) as rec:
        lws = await kube.create(lws_path(namespace), gpu_lws("g", gpu_queues.local_queue, 2))
        uid = lws["metadata"]["uid"]
        wls = await wait_workloads(
            kube,
            namespace,
            uid,
            lambda w: (
                sorted(w) == [0, 1]
                and sum(admitted(x) for x in w.values()) == 1
                and any(pending(x) for x in w.values())
            ),
            "one group admitted, the other pending",
        )
        waiting = next(i for i, w in wls.items() if not admitted(w))
        running = 1 - waiting
        await wait_kueue_pods(
            kube,
            namespace,
            "g",
            lambda pods: group_running(pods, running) and group_gated(pods, waiting),
            f"group {running} running, group {waiting} gated",
        )
        await stays_gated(kube, namespace, "g", waiting)
        await set_gpu_quota(kube, gpu_queues, 2 * GROUP_GPUS)
        await wait_lws(
            kube,
            namespace,
            "g",
            lambda o: (o.get("status") or {}).get("readyReplicas") == 2,
            "both groups ready",
        )
    seen = check_never_bypassed(rec, "g", uid)
    assert {u.group for u in seen} == {"0", "1"}, seen


async def test_scale_up_waits_for_quota_and_scale_down_of_a_waiting_group(
    kube: Kube, namespace: str, gpu_queues: Queues
) -> None:
    async with recording(kube, namespace) as rec:
        lws = await kube.create(lws_path(namespace), gpu_lws("g", gpu_queues.local_queue, 1))
        uid = lws["metadata"]["uid"]
        await wait_lws(
            kube,
            namespace,
            "g",
            lambda o: (o.get("status") or {}).get("readyReplicas") == 1,
            "group 0 ready",
        )
        await kube.patch(lws_path(namespace, "g"), {"spec": {"replicas": 2}})
        await wait_workloads(kube, namespace, uid, lambda w: pending(w.get(1)), "group 1 pending")
        await wait_kueue_pods(kube, namespace, "g", lambda p: group_gated(p, 1), "group 1 gated")
        await stays_gated(kube, namespace, "g", 1)
        # A waiting group scaled away: its pods go without ever being ungated.
        await kube.patch(lws_path(namespace, "g"), {"spec": {"replicas": 1}})
        await wait_kueue_pods(
            kube, namespace, "g", lambda p: not group_pods(p, 1) and len(p) == 2, "group 1 gone"
        )
        await kube.patch(lws_path(namespace, "g"), {"spec": {"replicas": 2}})
        await wait_kueue_pods(kube, namespace, "g", lambda p: group_gated(p, 1), "group 1 gated")
        await set_gpu_quota(kube, gpu_queues, 2 * GROUP_GPUS)
        await wait_kueue_pods(kube, namespace, "g", lambda p: group_running(p, 1), "running")
    check_never_bypassed(rec, "g", uid)


def new_image(body: dict[str, Any], **spec: Any) -> dict[str, Any]:
    """A merge patch to a new worker image (a new revision), plus ``spec`` fields."""
    container = body["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    template = {"workerTemplate": {"spec": {"containers": [{**container, "image": AGNHOST}]}}}
    return {"spec": {"leaderWorkerTemplate": template, **spec}}


def status_is(lws: dict[str, Any], **want: int) -> bool:
    status = lws.get("status") or {}
    return all(status.get(k, 0) == v for k, v in want.items())


async def test_rollout_surge_group_waits_for_quota(
    kube: Kube, namespace: str, gpu_queues: Queues
) -> None:
    """2 groups, maxSurge 1, maxUnavailable 0, quota for 2 groups: the surge group waits,
    gated, and no old group goes down meanwhile; with the quota raised it is admitted and
    runs. (What follows is not asserted: once a replaced group brings updatedReplicas to 2,
    Kueue drops the surge Workload and stops its pods, and whether the last old group was
    replaced before that is a race; see the next test for why.)"""
    await set_gpu_quota(kube, gpu_queues, 2 * GROUP_GPUS)
    strategy = {"rollingUpdateConfiguration": {"maxUnavailable": 0, "maxSurge": 1}}
    async with recording(kube, namespace) as rec:
        body = gpu_lws("g", gpu_queues.local_queue, 2, rolloutStrategy=strategy)
        lws = await kube.create(lws_path(namespace), body)
        uid = lws["metadata"]["uid"]
        await wait_lws(kube, namespace, "g", lambda o: status_is(o, readyReplicas=2), "2 ready")
        await kube.patch(lws_path(namespace, "g"), new_image(body))
        await wait_workloads(kube, namespace, uid, lambda w: pending(w.get(2)), "surge pending")
        await wait_kueue_pods(kube, namespace, "g", lambda p: group_gated(p, 2), "surge gated")
        await stays_gated(kube, namespace, "g", 2)
        current = await kube.get(lws_path(namespace, "g"))
        assert status_is(current, readyReplicas=2, updatedReplicas=1, replicas=3), current
        await set_gpu_quota(kube, gpu_queues, 3 * GROUP_GPUS)
        await wait_kueue_pods(
            kube, namespace, "g", lambda p: group_running(p, 2), "the surge group running"
        )
    seen = check_never_bypassed(rec, "g", uid)
    assert "2" in {u.group for u in seen}, seen


async def test_kueue_keeps_no_workload_for_a_surge_group_once_updated_reaches_replicas(
    kube: Kube, namespace: str, gpu_queues: Queues
) -> None:
    """Kueue's rule, not the operator's (v0.19.2 ``leaderworkerset_reconciler.go``,
    ``filterWorkloads``/``isRollingUpdateWithSurge``): surge Workloads are kept only while
    ``status.updatedReplicas < spec.replicas``, but LeaderWorkerSet's updatedReplicas counts
    the surge groups (upstream's semantics, kept). With 1 group and maxSurge 1, the surge
    group is "updated" from its creation, so Kueue never makes its Workload: its pods stay
    gated and the rollout waits for ever, with this operator as with upstream's. Kept as a
    test so that a fix in Kueue shows up here."""
    strategy = {"rollingUpdateConfiguration": {"maxUnavailable": 0, "maxSurge": 1}}
    async with recording(kube, namespace) as rec:
        body = gpu_lws("g", gpu_queues.local_queue, 1, rolloutStrategy=strategy)
        lws = await kube.create(lws_path(namespace), body)
        uid = lws["metadata"]["uid"]
        await wait_kueue_pods(kube, namespace, "g", lambda p: group_running(p, 0), "running")
        await set_gpu_quota(kube, gpu_queues, 2 * GROUP_GPUS)  # room for the surge group
        await kube.patch(lws_path(namespace, "g"), new_image(body))
        await wait_kueue_pods(kube, namespace, "g", lambda p: group_gated(p, 1), "surge gated")
        await wait_lws(
            kube, namespace, "g", lambda o: status_is(o, replicas=2, updatedReplicas=1), "surge"
        )
        await holds_for(
            kube,
            kueue.path("workloads", namespace),
            lambda objs: sorted(workloads_of(objs, uid)) == [0],
            10,
            "no Workload for the surge group",
        )
        current = await kube.get(lws_path(namespace, "g"))
        assert status_is(current, replicas=2, updatedReplicas=1, readyReplicas=1), current["status"]
    check_never_bypassed(rec, "g", uid)


async def test_group_recreation_and_eviction_keep_pods_gated(
    kube: Kube, namespace: str, gpu_queues: Queues
) -> None:
    async with recording(kube, namespace) as rec:
        lws = await kube.create(lws_path(namespace), gpu_lws("g", gpu_queues.local_queue, 1))
        uid = lws["metadata"]["uid"]
        await wait_kueue_pods(kube, namespace, "g", lambda p: group_running(p, 0), "running")
        # A worker container restarts: the group is recreated; its Workload stays admitted,
        # so Kueue ungates the new pods at once.
        await simulate.restart_container(kube, namespace, "g-0-1")
        first = {
            p["metadata"]["uid"]
            for p in (await kube.list(resource_path("v1", "pods", namespace=namespace)))["items"]
        }
        await wait_kueue_pods(
            kube,
            namespace,
            "g",
            lambda p: (
                group_running(p, 0) and not first & {x["metadata"]["uid"] for x in p.values()}
            ),
            "group 0 recreated and running",
        )
        # Evicted (deactivated): Kueue deletes the pods; the ones made again wait, gated.
        wl = (await wait_workloads(kube, namespace, uid, lambda w: 0 in w, "group 0's"))[0]
        await set_workload_active(kube, wl, False)
        await wait_kueue_pods(kube, namespace, "g", lambda p: group_gated(p, 0), "gated")
        await stays_gated(kube, namespace, "g", 0)
        await set_workload_active(kube, wl, True)
        await wait_kueue_pods(kube, namespace, "g", lambda p: group_running(p, 0), "running")
    check_never_bypassed(rec, "g", uid)


async def test_kueue_ungates_an_old_revision_leader_remade_mid_rollout(
    kube: Kube, namespace: str, gpu_queues: Queues
) -> None:
    """Kueue's own rule, not the operator's: a pod of the old revision while its StatefulSet is
    mid-update is ungated at once (kueue pkg/util/statefulset/statefulset.go, shouldUngatePod).
    Group 0 sits below a rollout's partition; evicted, its leader is made again by the leader
    StatefulSet at the old revision, and Kueue ungates it although the Workload is not
    admitted. Kept as a test so that a change of that rule in Kueue shows up here."""
    await set_gpu_quota(kube, gpu_queues, 2 * GROUP_GPUS)
    async with recording(kube, namespace) as rec:
        body = gpu_lws("g", gpu_queues.local_queue, 2)
        lws = await kube.create(lws_path(namespace), body)
        uid = lws["metadata"]["uid"]
        await wait_kueue_pods(
            kube, namespace, "g", lambda p: group_running(p, 0) and group_running(p, 1), "running"
        )
        partition = {"rollingUpdateConfiguration": {"partition": 1}}
        await kube.patch(lws_path(namespace, "g"), new_image(body, rolloutStrategy=partition))
        await wait_lws(
            kube,
            namespace,
            "g",
            lambda o: (
                (o.get("status") or {}).get("updatedReplicas") == 1
                and (o.get("status") or {}).get("readyReplicas") == 2
            ),
            "group 1 updated, group 0 kept below the partition",
        )
        wl = (await wait_workloads(kube, namespace, uid, lambda w: 0 in w, "group 0's"))[0]
        # No quota left for group 0 once it is evicted (group 1 keeps what it was admitted
        # with): Kueue could otherwise admit group 0 again before its rule ungates the remade
        # leader, and the ungating counted as admitted (DID NOT RAISE: a clean-clone CI run
        # and 1 of 3 local runs).
        await set_gpu_quota(kube, gpu_queues, GROUP_GPUS)
        await set_workload_active(kube, wl, False)
        old = {
            p["metadata"]["uid"]
            for p in (await kube.list(resource_path("v1", "pods", namespace=namespace)))["items"]
        }

        def remade_leader_ungated(pods: Objects) -> bool:
            leader = pods.get(f"{namespace}/g-0")
            return leader is not None and leader["metadata"]["uid"] not in old and not gated(leader)

        await wait_kueue_pods(kube, namespace, "g", remade_leader_ungated, "g-0 remade, ungated")
    with pytest.raises(AssertionError, match=r"- g-0 \(.*group 0.*Workload"):
        check_never_bypassed(rec, "g", uid)
