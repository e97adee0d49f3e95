"""What only real containers show, with the operator deployed in the cluster: processes that
talk over the pod network and cluster DNS, exit by themselves, answer readiness probes and take
time to stop."""

from __future__ import annotations

import contextlib
import time
from typing import Any

from lws_operator.api import constants as c
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_operator.plan.lws.groups import pod_ready
from lws_testbed.realnode import node as realnode
from lws_testbed.wait import Objects, follow_objects, wait_for_objects, wait_on
from tests.cluster.controller.helpers import create_available, is_available, wait_lws, wait_pods
from tests.e2e.conftest import E2E
from tests.e2e.helpers import (
    group_pods,
    lws_events,
    pod_http,
    probe_container,
    probe_lws,
    reports,
    restarts,
)

TIMEOUT = 180


def by_group(pods: dict[str, dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for p in pods.values():
        out.setdefault(p["metadata"]["labels"][c.GROUP_INDEX_LABEL], []).append(p)
    return out


async def test_workers_find_their_leader_through_cluster_dns(
    kube: Kube, namespace: str, workload_image: str
) -> None:
    """The seed's rendezvous: each leader listens, each worker resolves $(LWS_LEADER_ADDRESS)
    through CoreDNS, connects and reports its LWS_* variables; every leader hears exactly its
    own size-1 workers."""
    ns, name, size = namespace, "rdv", 3
    await create_available(kube, ns, probe_lws(name, workload_image, replicas=2, size=size))
    groups = by_group(await group_pods(kube, ns, name))
    assert sorted(groups) == ["0", "1"]
    for g, members in groups.items():
        (leader,) = [p for p in members if p["metadata"]["labels"][c.WORKER_INDEX_LABEL] == "0"]
        assert leader["spec"]["nodeName"] == "real-node-0"
        heard = await reports(leader)
        want = sorted(p["metadata"]["name"] for p in members if p is not leader)
        assert sorted(r["pod"] for r in heard) == want, heard
        address = f"{name}-{g}.{name}.{ns}"
        for r in heard:
            assert r["group_index"] == g and r["group_size"] == str(size), r
            assert r["leader_address"] == address, r
            assert r["resolved"] == [leader["status"]["podIP"]], r
            assert r["worker_index"] == r["pod"].rsplit("-", 1)[1], r
        assert sorted(r["worker_index"] for r in heard) == [str(i) for i in range(1, size)]


async def test_a_worker_that_exits_nonzero_recreates_its_group_once(
    kube: Kube, namespace: str, workload_image: str
) -> None:
    ns, name = namespace, "crash"
    await create_available(kube, ns, probe_lws(name, workload_image, replicas=2, size=3))
    before = await group_pods(kube, ns, name)
    victim = before[f"{name}-1-2"]
    status, _ = await pod_http(victim, "/exit?code=3", method="POST")
    assert status == 202
    old = {
        p["metadata"]["uid"]
        for p in before.values()
        if p["metadata"]["name"].startswith(f"{name}-1")
    }

    def recreated(objs: Objects) -> bool:
        group = [
            p
            for p in objs.values()
            if p["metadata"]["labels"].get(c.GROUP_INDEX_LABEL) == "1"
            and not p["metadata"].get("deletionTimestamp")
        ]
        return (
            len(group) == 3
            and not {p["metadata"]["uid"] for p in group} & old
            and all(pod_ready(p) for p in group)
        )

    await wait_pods(kube, ns, name, recreated, "group 1 all new and Ready", timeout=TIMEOUT)
    await wait_lws(kube, ns, name, lambda o: is_available(o, 2), "Available again")
    after = await group_pods(kube, ns, name)
    for pod_name, pod in before.items():
        if pod_name.startswith(f"{name}-0"):  # the other group: untouched
            assert after[pod_name]["metadata"]["uid"] == pod["metadata"]["uid"], pod_name
            assert restarts(after[pod_name]) == 0, pod_name
    assert all(restarts(p) == 0 for p in after.values())
    events = [
        e for e in await lws_events(kube, ns, "RecreateGroup") if e["regarding"].get("name") == name
    ]
    assert len(events) == 1, events


async def test_restart_policy_none_restarts_only_the_container(
    kube: Kube, namespace: str, workload_image: str
) -> None:
    ns, name = namespace, "norestart"
    body = probe_lws(name, workload_image, replicas=1, size=3)
    body["spec"]["leaderWorkerTemplate"]["restartPolicy"] = "None"
    await create_available(kube, ns, body)
    before = await group_pods(kube, ns, name)
    victim = f"{name}-0-1"
    status, _ = await pod_http(before[victim], "/exit?code=3", method="POST")
    assert status == 202

    def restarted(objs: Objects) -> bool:
        pod = objs.get(f"{ns}/{victim}")
        return pod is not None and restarts(pod) == 1 and pod_ready(pod)

    objs = await wait_pods(kube, ns, name, restarted, f"{victim} restarted by the kubelet")
    last = objs[f"{ns}/{victim}"]["status"]["containerStatuses"][0]["lastState"]["terminated"]
    assert last["exitCode"] == 3, last
    after = await group_pods(kube, ns, name)
    assert {n: p["metadata"]["uid"] for n, p in after.items()} == {
        n: p["metadata"]["uid"] for n, p in before.items()
    }
    assert {n: restarts(p) for n, p in after.items() if n != victim} == {
        n: 0 for n in after if n != victim
    }
    assert not [
        e for e in await lws_events(kube, ns, "RecreateGroup") if e["regarding"]["name"] == name
    ]


async def test_leader_ready_holds_the_workers_until_the_leader_answers(
    kube: Kube, namespace: str, workload_image: str
) -> None:
    ns, name = namespace, "ldready"
    body = probe_lws(
        name,
        workload_image,
        replicas=1,
        size=3,
        leader_args=("--hold-ready",),
        startupPolicy="LeaderReady",
    )
    await kube.create(resource_path(c.API_VERSION, c.PLURAL, namespace=ns), body)
    leader = f"{name}-0"

    def probe_failures(objs: Objects) -> int:
        # The kubelet's events are aggregated: one object whose count grows.
        return sum(
            e.get("deprecatedCount") or (e.get("series") or {}).get("count") or 1
            for e in objs.values()
            if e.get("reason") == "Unhealthy" and "Readiness" in (e.get("note") or "")
        )

    # The kubelet reports the leader's readiness probe failing, again and again...
    await wait_for_objects(
        kube,
        resource_path("events.k8s.io/v1", "events", namespace=ns),
        lambda objs: probe_failures(objs) >= 3,
        timeout=TIMEOUT,
        what=f"3 failed readiness probes of {leader}",
        field_selector=f"regarding.name={leader}",
    )
    # ... and meanwhile no worker exists.
    workers = await kube.get_or_none(
        resource_path("apps/v1", "statefulsets", namespace=ns, name=f"{name}-0")
    )
    assert workers is None, workers
    pods = await group_pods(kube, ns, name)
    assert list(pods) == [leader], list(pods)
    status, _ = await pod_http(pods[leader], "/ready", method="POST")
    assert status == 200
    lws = await wait_lws(kube, ns, name, lambda o: is_available(o, 1), "Available", TIMEOUT)
    assert lws["status"]["readyReplicas"] == 1
    sts = await kube.get(resource_path("apps/v1", "statefulsets", namespace=ns, name=f"{name}-0"))
    ready_at = next(
        cond["lastTransitionTime"]
        for cond in (await group_pods(kube, ns, name))[leader]["status"]["conditions"]
        if cond["type"] == "Ready"
    )
    assert sts["metadata"]["creationTimestamp"] >= ready_at, (sts["metadata"], ready_at)


async def kill_and_follow(
    kube: Kube, e2e: E2E, ns: str, name: str, victim: dict[str, Any], old: set[str]
) -> tuple[float, dict[str, int], dict[str, float], dict[str, float]]:
    """Kill ``victim``'s container from the host and follow the group's pods (a watch listed
    before the kill) until it is Ready again with all-new pods: the seconds that took, and for
    each old pod the grace it was deleted with, when it was first seen deleting and when
    gone."""
    graces: dict[str, int] = {}
    deleting: dict[str, float] = {}
    gone: dict[str, float] = {}

    def recovered(objs: Objects) -> bool:
        now = time.monotonic()
        live = {p["metadata"]["uid"]: p for p in objs.values()}
        for uid, p in live.items():
            if uid in old and p["metadata"].get("deletionTimestamp"):
                deleting.setdefault(uid, now)
                # The first seen: the kubelet's final deletion, once a pod stopped, shows 0.
                graces.setdefault(uid, p["metadata"].get("deletionGracePeriodSeconds"))
        for uid in old - set(live):
            gone.setdefault(uid, now)
        fresh = [p for p in live.values() if p["metadata"]["uid"] not in old]
        return len(fresh) == len(old) and all(pod_ready(p) for p in fresh) and gone.keys() == old

    selector = f"{c.SET_NAME_LABEL}={name}"
    pods = resource_path("v1", "pods", namespace=ns)
    cid = realnode.container_id(victim["status"]["containerStatuses"][0])
    async with contextlib.aclosing(follow_objects(kube, pods, label_selector=selector)) as seen:
        await anext(seen)
        t0 = time.monotonic()
        realnode.kill_container(e2e.containerd_socket, cid)
        await wait_on(seen, recovered, timeout=TIMEOUT, what="the group recreated and Ready")
    return (
        time.monotonic() - t0,
        graces,
        {u: t - t0 for u, t in deleting.items()},
        {u: t - t0 for u, t in gone.items()},
    )


async def test_a_failed_group_is_torn_down_within_the_failed_group_grace(
    kube: Kube, namespace: str, workload_image: str, e2e: E2E, record_property: Any
) -> None:
    """Pods that take 15 s to stop on SIGTERM (grace 30 s): a worker's container killed from
    the host, every pod of its group is deleted with the failed-group grace (1 s, the
    default), so the group is Ready again long before 15 s; then a rollout of the same group
    deletes its pods with their own 30 s (docs/compatibility.md F11)."""
    ns, name, delay = namespace, "teardown", 15.0
    body = probe_lws(
        name, workload_image, replicas=1, size=3, args=(f"--term-delay={delay}s",), grace=30
    )
    await create_available(kube, ns, body)
    before = await group_pods(kube, ns, name)
    old = {p["metadata"]["uid"] for p in before.values()}
    recovery, graces, _, _ = await kill_and_follow(kube, e2e, ns, name, before[f"{name}-0-2"], old)
    record_property("recovery_seconds", round(recovery, 2))
    print(f"\ngroup of 3 with a {delay:.0f} s shutdown: Ready again in {recovery:.1f} s")
    assert graces == dict.fromkeys(old, 1), graces
    assert recovery < delay, recovery

    # A rollout: each old pod goes with its own grace (the StatefulSet controller deletes it).
    current = await group_pods(kube, ns, name)
    leader = current[f"{name}-0"]
    env = [{"name": "ROLLED", "value": "1"}]
    template = body["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    template["spec"]["containers"][0]["env"] = env
    await kube.patch(
        resource_path(c.API_VERSION, c.PLURAL, namespace=ns, name=name),
        {"spec": {"leaderWorkerTemplate": {"workerTemplate": template}}},
    )

    def leader_deleting(objs: Objects) -> bool:
        pod = objs.get(f"{ns}/{name}-0")
        return (
            pod is not None
            and pod["metadata"]["uid"] == leader["metadata"]["uid"]
            and bool(pod["metadata"].get("deletionTimestamp"))
        )

    objs = await wait_pods(kube, ns, name, leader_deleting, "the old leader deleting, rolled")
    assert objs[f"{ns}/{name}-0"]["metadata"]["deletionGracePeriodSeconds"] == 30


async def test_a_failed_group_with_grace_pod_waits_for_each_pod_to_stop(
    kube: Kube, namespace: str, workload_image: str, e2e: E2E
) -> None:
    """The annotation ``failed-group-grace-seconds: pod``: a failed group's pods keep their own
    grace, as upstream deletes them. Pods that take 3 s to stop: every old pod really took its
    3 s (the StatefulSet waits for each name to be free)."""
    ns, name, delay = namespace, "graceful", 3.0
    body = probe_lws(
        name, workload_image, replicas=1, size=3, args=(f"--term-delay={delay}s",), grace=15
    )
    body["metadata"]["annotations"] = {c.FAILED_GROUP_GRACE_ANNOTATION: "pod"}
    await create_available(kube, ns, body)
    before = await group_pods(kube, ns, name)
    old = {p["metadata"]["uid"] for p in before.values()}
    recovery, graces, deleting, gone = await kill_and_follow(
        kube, e2e, ns, name, before[f"{name}-0-2"], old
    )
    assert graces == dict.fromkeys(old, 15), graces
    assert recovery >= delay
    for uid in old:
        assert gone[uid] - deleting.get(uid, 0.0) >= delay - 0.5, (uid, deleting, gone)


def _resolved(pod: dict[str, Any] | None) -> bool:
    """The pod's init container (``--resolve-leader``) exited 0: it resolved its leader."""
    statuses = ((pod or {}).get("status") or {}).get("initContainerStatuses") or []
    done = [(s.get("state") or {}).get("terminated") or {} for s in statuses]
    return bool(done) and all(t.get("exitCode") == 0 for t in done)


def _failed_to_resolve(pod: dict[str, Any] | None, times: int) -> bool:
    """The pod's init container failed (could not resolve its leader) at least ``times``."""
    statuses = ((pod or {}).get("status") or {}).get("initContainerStatuses") or []
    return any(
        s.get("restartCount", 0) >= times
        and ((s.get("lastState") or {}).get("terminated") or {}).get("exitCode") == 1
        for s in statuses
    )


async def test_publish_not_ready_addresses_lets_an_init_container_resolve_an_unready_leader(
    kube: Kube, namespace: str, workload_image: str
) -> None:
    """A worker's init container resolves $(LWS_LEADER_ADDRESS) through CoreDNS while its
    leader is running but not Ready: with publishNotReadyAddresses (unset: true, as upstream)
    it resolves at once; with false it cannot (it fails, is restarted, fails again) until the
    leader is Ready."""
    ns = namespace
    resolver = probe_container(workload_image, "--resolve-leader")
    del resolver["readinessProbe"], resolver["ports"]
    resolver["name"] = "resolve"

    def body(name: str, publish: bool | None) -> dict[str, Any]:
        lws = probe_lws(name, workload_image, replicas=1, size=2, leader_args=("--hold-ready",))
        template = lws["spec"]["leaderWorkerTemplate"]
        template["restartPolicy"] = "None"  # a failing init container is not a group failure
        template["workerTemplate"]["spec"]["initContainers"] = [resolver]
        if publish is not None:
            lws["spec"]["networkConfig"] = {"publishNotReadyAddresses": publish}
        return lws

    path = resource_path(c.API_VERSION, c.PLURAL, namespace=ns)
    await kube.create(path, body("pnra-off", False))
    await kube.create(path, body("pnra-on", None))

    pods = await wait_pods(
        kube,
        ns,
        "pnra-on",
        lambda objs: _resolved(objs.get(f"{ns}/pnra-on-0-1")),
        "the worker's init container resolved its leader",
        TIMEOUT,
    )
    assert not pod_ready(pods[f"{ns}/pnra-on-0"]), "the leader must still be unready"

    pods = await wait_pods(
        kube,
        ns,
        "pnra-off",
        lambda objs: _failed_to_resolve(objs.get(f"{ns}/pnra-off-0-1"), 2),
        "the worker's init container failed to resolve its leader twice",
        TIMEOUT,
    )
    assert not pod_ready(pods[f"{ns}/pnra-off-0"])
    assert not _resolved(pods[f"{ns}/pnra-off-0-1"])
    status, _ = await pod_http(pods[f"{ns}/pnra-off-0"], "/ready", method="POST")
    assert status == 200
    await wait_pods(
        kube,
        ns,
        "pnra-off",
        lambda objs: (
            pod_ready(objs.get(f"{ns}/pnra-off-0") or {})
            and _resolved(objs.get(f"{ns}/pnra-off-0-1"))
        ),
        "the leader Ready, then its worker's init container resolved it",
        TIMEOUT,
    )
