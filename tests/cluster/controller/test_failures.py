"""Failure handling that neither thrashes nor destroys evidence (issue 16), on the local
cluster's kwok nodes: the restart budget (KEP-820's maxGroupRestarts, Failed), the backoff of
a crash loop, the history ConfigMap with each recreation's evidence (surviving an operator
restart), a recreation asked for by a user, node health, and publishNotReadyAddresses.

The module runs its own operator with a configuration file of short backoff intervals (the
session's operator is paused meanwhile). kwok serves no pod logs: the log tails are recorded as
"log unavailable: <the API server's answer>", which the tests check is what was kept.
"""

from __future__ import annotations

import dataclasses
import datetime
import itertools
import json
import os
import re
import secrets
import signal
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web

from lws_operator import pki
from lws_operator.api import constants as c
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_operator.kubectl.lws import cmd_status
from lws_operator.plan.lws.backoff import Backoff, delay
from lws_operator.plan.lws.history import history_name
from lws_operator.plan.meta import controller_of, is_controlled_by, is_deleting
from lws_testbed.local import LocalCluster
from lws_testbed.nodes import NodeShape, fake_nodes
from lws_testbed.operator_process import OperatorProcess, start_operator
from lws_testbed.simulate import (
    fail_pod,
    lose_node,
    make_ready,
    make_unready,
    restart_container,
)
from lws_testbed.wait import Objects, wait_for_objects
from tests.cluster.controller.helpers import (
    condition,
    create_available,
    is_available,
    lws_body,
    lws_path,
    wait_lws,
    wait_pods,
)
from tests.cluster.deploy.helpers import kubectl_lws as run_plugin

BACKOFF = Backoff(initial=1.0, maximum=4.0, reset_after=600.0)
PER_GROUP = 3  # recreations kept per group


@pytest.fixture(scope="module")
def config_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("failures") / "config.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "config.lws-operator.x-k8s.io/v1alpha1",
                "kind": "Configuration",
                "groupRecreation": {
                    "backoff": {
                        "initialSeconds": BACKOFF.initial,
                        "maxSeconds": BACKOFF.maximum,
                        "resetAfterReadySeconds": BACKOFF.reset_after,
                    },
                    "history": {"recreationsPerGroup": PER_GROUP, "logTimeoutSeconds": 2},
                },
            }
        )
    )
    return path


@pytest.fixture(scope="module")
async def failures_operator(
    kube: Kube,
    kubeconfig: Path,
    local_cluster: LocalCluster | None,
    lws_api: None,
    config_file: Path,
    pause_session_operator: Callable[[], Any],
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[OperatorProcess]:
    if local_cluster is None:
        pytest.skip("runs its own operator with a configuration file")
    own = local_cluster.kubeconfig("lws-operator")
    log = tmp_path_factory.mktemp("failures-operator") / "operator.log"
    async with pause_session_operator():
        op = await start_operator(kube, own, log, "--config", str(config_file))
        try:
            yield op
            op.check_alive()
        finally:
            await op.stop()


@pytest.fixture
async def ns(namespace: str, failures_operator: OperatorProcess) -> AsyncIterator[str]:
    yield namespace
    failures_operator.check_alive()


Cli = Callable[..., Awaitable[str]]


@pytest.fixture
def kubectl_lws(kubeconfig: Path) -> Cli:
    """``kubectl lws ARGS`` (the plugin, as kubectl runs it) against the local cluster."""

    async def run(*args: str) -> str:
        return await run_plugin("--kubeconfig", str(kubeconfig), *args)

    return run


# ---- helpers ------------------------------------------------------------------------------


def history_path(ns: str, name: str | None = None) -> str:
    return resource_path("v1", "configmaps", namespace=ns, name=name)


def groups_of(cm: dict[str, Any] | None) -> dict[int, dict[str, Any]]:
    data = (cm or {}).get("data") or {}
    return {int(k[6:]): json.loads(v) for k, v in data.items() if k.startswith("group-")}


def summary(objs: Objects) -> str:
    return (
        "\n".join(
            f"- {k}: annotations={o['metadata'].get('annotations')} "
            + json.dumps(
                {i: {**g, "recreations": len(g["recreations"])} for i, g in groups_of(o).items()}
            )
            for k, o in objs.items()
        )
        or "(no history ConfigMap)"
    )


async def wait_history(
    kube: Kube,
    ns: str,
    lws: str,
    done: Callable[[dict[str, Any]], bool],
    what: str,
    timeout: float = 60,
) -> dict[str, Any]:
    name = history_name(lws)
    objs = await wait_for_objects(
        kube,
        history_path(ns),
        lambda objs: f"{ns}/{name}" in objs and done(objs[f"{ns}/{name}"]),
        timeout=timeout,
        what=f"history of {lws}: {what}",
        field_selector=f"metadata.name={name}",
        summary=summary,
    )
    return objs[f"{ns}/{name}"]


def recreations(cm: dict[str, Any], group: int) -> list[dict[str, Any]]:
    return list(groups_of(cm).get(group, {}).get("recreations", []))


def total(cm: dict[str, Any], group: int) -> int:
    return int(groups_of(cm).get(group, {}).get("total", 0))


def has_total(group: int, n: int) -> Callable[[dict[str, Any]], bool]:
    return lambda cm: total(cm, group) == n


async def wait_group_running(
    kube: Kube, ns: str, name: str, group: int, size: int, not_uids: set[str]
) -> dict[str, Any]:
    """Every pod of ``group`` new (none of ``not_uids``), Running with container statuses,
    and of the new incarnation: the workers owned by the worker StatefulSet that the new
    leader owns (the old StatefulSet, until its foreground deletion ends, may make a pod of
    its own, which goes with it)."""
    sts_name = f"{name}-{group}"

    def new_sts(o: dict[str, Any]) -> bool:
        leader = controller_of(o)
        return (
            o["metadata"]["name"] == sts_name
            and not is_deleting(o)
            and leader is not None
            and leader["uid"] not in not_uids
        )

    found = await wait_for_objects(
        kube,
        resource_path("apps/v1", "statefulsets", namespace=ns),
        lambda objs: any(new_sts(o) for o in objs.values()),
        timeout=60,
        what=f"worker StatefulSet {sts_name} of a new leader",
    )
    (sts,) = [o for o in found.values() if new_sts(o)]
    leader_uid, sts_uid = (controller_of(sts) or {})["uid"], sts["metadata"]["uid"]

    def ok(objs: Objects) -> bool:
        mine = [
            p
            for p in objs.values()
            if p["metadata"]["labels"].get(c.GROUP_INDEX_LABEL) == str(group)
            and not p["metadata"].get("deletionTimestamp")
        ]
        return len(mine) == size and all(
            p["metadata"]["uid"] not in not_uids
            and (p["metadata"]["uid"] == leader_uid or is_controlled_by(p, sts_uid))
            and (p.get("status") or {}).get("phase") == "Running"
            and (p.get("status") or {}).get("containerStatuses")
            for p in mine
        )

    return await wait_pods(kube, ns, name, ok, f"group {group} running again, all pods new")


def group_uids(objs: Objects, group: int) -> set[str]:
    return {
        p["metadata"]["uid"]
        for p in objs.values()
        if p["metadata"]["labels"].get(c.GROUP_INDEX_LABEL) == str(group)
    }


async def pods_now(kube: Kube, ns: str, name: str) -> Objects:
    return await wait_pods(kube, ns, name, lambda objs: True, "listed")


async def events(
    kube: Kube, ns: str, uid: str, reason: str, count: int = 1, timeout: float = 60
) -> list[dict[str, Any]]:
    objs = await wait_for_objects(
        kube,
        resource_path("events.k8s.io/v1", "events", namespace=ns),
        lambda objs: sum(e.get("reason") == reason for e in objs.values()) >= count,
        timeout=timeout,
        what=f"{count} {reason} event(s)",
        field_selector=f"regarding.uid={uid}",
    )
    return [e for e in objs.values() if e.get("reason") == reason]


async def wait_failed(kube: Kube, ns: str, name: str, what: str) -> dict[str, Any]:
    def failed(o: dict[str, Any]) -> bool:
        return (condition(o, c.CONDITION_FAILED) or {}).get("status") == "True"

    return await wait_lws(kube, ns, name, failed, what)


def budget_body(name: str, budget: int | None, replicas: int = 2, size: int = 2) -> dict[str, Any]:
    body = lws_body(name, replicas=replicas, size=size)
    if budget is not None:
        body["spec"]["leaderWorkerTemplate"]["maxGroupRestarts"] = budget
    return body


async def crash(kube: Kube, ns: str, pod: str, n: int) -> None:
    await restart_container(
        kube, ns, pod, exit_code=3, reason="Error", message=f"NCCL preflight failed ({n})"
    )


# ---- the restart budget -------------------------------------------------------------------


@pytest.mark.parametrize("budget", [0, 1, 3])
async def test_a_group_stops_after_its_budget_and_keeps_its_pods(
    kube: Kube, ns: str, budget: int
) -> None:
    name = f"budget{budget}"
    lws = await create_available(kube, ns, budget_body(name, budget))
    uid = lws["metadata"]["uid"]
    pods = await pods_now(kube, ns, name)
    for n in range(1, budget + 1):
        old = group_uids(pods, 1)
        await crash(kube, ns, f"{name}-1-1", n)
        await wait_history(kube, ns, name, has_total(1, n), f"recreation {n}")
        pods = await wait_group_running(kube, ns, name, 1, 2, old)
    kept = group_uids(pods, 1)
    await crash(kube, ns, f"{name}-1-1", budget + 1)

    failed = await wait_failed(kube, ns, name, "Failed=True")
    cond = condition(failed, c.CONDITION_FAILED) or {}
    assert cond["reason"] == "MaxGroupRestartsExceeded"
    assert "group(s) 1 exceeded maxGroupRestarts" in cond["message"], cond
    assert failed["status"].get("readyReplicas", 0) == 1, "a Failed group counts as not ready"
    (warning,) = await events(kube, ns, uid, "MaxGroupRestartsExceeded")
    assert f"after {budget} recreations, maxGroupRestarts {budget}" in warning["note"]
    cm = await wait_history(
        kube, ns, name, lambda cm: bool(groups_of(cm).get(1, {}).get("failed")), "group 1 Failed"
    )
    counts = json.loads(cm["metadata"]["annotations"][c.GROUP_RESTART_COUNT_ANNOTATION])
    assert counts == ({"1": budget} if budget else {})

    # The other group still recovers (its own budget), and group 1's pods are kept as they are.
    old0 = group_uids(pods, 0)
    await crash(kube, ns, f"{name}-0-1", 1)
    if budget == 0:
        await wait_history(
            kube,
            ns,
            name,
            lambda cm: bool(groups_of(cm).get(0, {}).get("failed")),
            "group 0 Failed too",
        )
        after = await pods_now(kube, ns, name)
        assert group_uids(after, 0) == old0
    else:
        after = await wait_group_running(kube, ns, name, 0, 2, old0)
        await wait_lws(
            kube,
            ns,
            name,
            lambda o: o["status"].get("readyReplicas") == 1,
            "group 0 ready again, group 1 still left out",
        )
    assert group_uids(after, 1) == kept, "the Failed group's pods must be kept"


async def test_a_user_recreation_brings_a_failed_group_back(
    kube: Kube, ns: str, kubectl_lws: Cli
) -> None:
    name = "askme"
    lws = await create_available(kube, ns, budget_body(name, 0, replicas=1))
    pods = await pods_now(kube, ns, name)
    await crash(kube, ns, f"{name}-0", 1)
    await wait_failed(kube, ns, name, "Failed")
    out = await kubectl_lws("recreate", name, "0", "-n", ns)
    assert "recreate group(s) 0 now" in out
    await wait_group_running(kube, ns, name, 0, 2, group_uids(pods, 0))
    back = await wait_lws(
        kube,
        ns,
        name,
        lambda o: (
            (condition(o, c.CONDITION_FAILED) or {}).get("status") == "False" and is_available(o, 1)
        ),
        "no longer Failed, Available",
    )
    assert (condition(back, c.CONDITION_FAILED) or {})["reason"] == "MaxGroupRestartsExceeded"
    cm = await wait_history(
        kube, ns, name, lambda cm: total(cm, 0) == 1, "the requested recreation recorded"
    )
    (entry,) = recreations(cm, 0)
    assert entry["trigger"] == "requested" and entry["counted"] is False
    assert groups_of(cm)[0]["restarts"] == 0, "a user's recreation starts the budget afresh"
    assert cm["data"]["requests"] == lws_value(await kube.get(lws_path(ns, name)))
    (note,) = [e["note"] for e in await events(kube, ns, lws["metadata"]["uid"], "RecreateGroup")]
    assert note == f"Recreation requested, deleted leader pod {name}-0 to recreate group 0"


def lws_value(lws: dict[str, Any]) -> str:
    return str(lws["metadata"]["annotations"][c.RECREATE_GROUPS_ANNOTATION])


# ---- backoff and evidence -----------------------------------------------------------------


async def test_a_crash_loop_backs_off_exponentially_and_keeps_evidence(
    kube: Kube, ns: str, kubectl_lws: Cli
) -> None:
    """Recreations 1-5 of one group, each crashing as soon as it runs: the first at once,
    then 1, 2, 4, 4 s apart (capped), measured at the watch events of the history; a
    GroupBackoff event per wait; the other group untouched; each record with what failed."""
    name = "loop"
    lws = await create_available(kube, ns, budget_body(name, None))
    pods = await pods_now(kube, ns, name)
    untouched = group_uids(pods, 0)
    seen: list[float] = []
    crashed_at: list[float] = []
    for n in range(1, 6):
        old = group_uids(pods, 1)
        crashed_at.append(time.monotonic())
        await crash(kube, ns, f"{name}-1-1", n)
        if n == 5:  # a 4 s wait: what kubectl lws status shows meanwhile (in process: fast)
            await wait_history(
                kube,
                ns,
                name,
                lambda cm: bool(groups_of(cm)[1].get("backoff")),
                "the wait announced",
            )
            during = await cmd_status(kube, ns, name)
            left = [
                line
                for line in during.splitlines()
                if line.startswith("group 1: crash loop, next recreation in ")
            ]
            assert left and 0 <= int(left[0].split(" in ")[1].split()[0]) <= 4, during
        await wait_history(kube, ns, name, has_total(1, n), f"recreation {n}", timeout=30)
        seen.append(time.monotonic())
        pods = await wait_group_running(kube, ns, name, 1, 2, old)
    cm = await wait_history(kube, ns, name, lambda cm: total(cm, 1) == 5, "5 recreations")
    kept = recreations(cm, 1)
    assert [r["n"] for r in kept] == [3, 4, 5], f"only the last {PER_GROUP} are kept"
    # Operator-side times: recreation n+1 comes delay(n) after recreation n, not sooner.
    for streak, gap in enumerate(_gaps([r["at"] for r in kept]), start=3):
        assert delay(streak, BACKOFF) - 0.05 <= gap <= delay(streak, BACKOFF) + 2.0, (streak, gap)
    # Test-side times (watch events, each up to a few hundred ms late under load): the first
    # recreation did not wait; later ones waited from the previous.
    assert seen[0] - crashed_at[0] < 1.0
    for n in range(1, 5):
        assert seen[n] - seen[n - 1] >= delay(n, BACKOFF) - 0.5, (n, seen)
    # One GroupBackoff per wait the group had to sit out (a group slower to come back than its
    # backoff had none to wait): the time left and the whole step, capped at 4 s.
    waits = await events(kube, ns, lws["metadata"]["uid"], "GroupBackoff", count=1)
    steps = []
    for note in (e["note"] for e in waits):
        m = re.fullmatch(
            r"group 1: crash loop, next recreation in (\d+) s "
            r"\(backoff (\d+) s after the last one\)",
            note,
        )
        assert m is not None, note
        assert 1 <= int(m[1]) <= int(m[2]) and int(m[2]) in (1, 2, 4), note
        steps.append(int(m[2]))
    assert 4 in steps, steps
    assert group_uids(await pods_now(kube, ns, name), 0) == untouched

    last = kept[-1]
    assert last["trigger"] == "restarted" and last["counted"] is True and last["waited"] >= 3.9
    (failure,) = last["failures"]
    assert failure["pod"] == f"{name}-1-1" and failure["container"] == "worker"
    assert failure["exitCode"] == 3 and failure["reason"] == "Error"
    assert failure["message"] == "NCCL preflight failed (5)" and failure["restartCount"] == 1
    assert failure["node"].startswith("gpu-node-")
    # kwok serves no logs: what the API server answered is what was kept.
    assert failure["logError"].startswith("log unavailable: "), failure
    assert not [k for k in cm["data"] if k.startswith("log-")]
    evidence = [e["note"] for e in await events(kube, ns, lws["metadata"]["uid"], "GroupFailure")]
    assert any("container worker exited 3 (Error) after 1 restarts on node" in n for n in evidence)

    status = await kubectl_lws("status", name, "-n", ns)
    assert "group 1: 5 recreations, 5 counted by the budget; last 3:" in status, status
    assert re.search(r"#5 \d+s ago \(restarted, after a 4(\.\d)? s backoff\): pod loop-1-1", status)
    assert "NCCL preflight failed (5)" in status, status
    logs = await kubectl_lws("logs", name, "1", "-n", ns)

    assert "=== group 1 recreation #5" in logs and "(log unavailable: " in logs, logs


def _gaps(times: list[str]) -> list[float]:
    parsed = [datetime.datetime.fromisoformat(t.replace("Z", "+00:00")) for t in times]
    return [(b - a).total_seconds() for a, b in itertools.pairwise(parsed)]


# ---- history across operator restarts ----------------------------------------------------


async def test_the_budget_and_history_survive_an_operator_restart(
    kube: Kube, ns: str, failures_operator: OperatorProcess
) -> None:
    name = "survive"
    await create_available(kube, ns, budget_body(name, 2, replicas=1))
    pods = await pods_now(kube, ns, name)
    old = group_uids(pods, 0)
    await crash(kube, ns, f"{name}-0", 1)
    await wait_history(kube, ns, name, lambda cm: total(cm, 0) == 1, "recreation 1")
    pods = await wait_group_running(kube, ns, name, 0, 2, old)

    await failures_operator.stop()
    await failures_operator.restart(kube)
    old = group_uids(pods, 0)
    await crash(kube, ns, f"{name}-0", 2)
    cm = await wait_history(
        kube, ns, name, lambda cm: total(cm, 0) == 2, "recreation 2, after the restart"
    )
    assert [r["n"] for r in recreations(cm, 0)] == [1, 2]
    assert groups_of(cm)[0]["streak"] == 2, "the crash-loop streak survived too"
    pods = await wait_group_running(kube, ns, name, 0, 2, old)
    kept = group_uids(pods, 0)
    await crash(kube, ns, f"{name}-0", 3)
    await wait_failed(kube, ns, name, "Failed after 2 recreations")
    assert group_uids(await pods_now(kube, ns, name), 0) == kept


# ---- node health ----------------------------------------------------------------------------


@pytest.fixture
async def own_node(kube: Kube) -> AsyncIterator[str]:
    prefix = f"sick-{secrets.token_hex(3)}"
    (node,) = fake_nodes(
        NodeShape(count=1, gpus=8, name_prefix=prefix, extra_labels={"sick": prefix})
    )
    await kube.create(resource_path("v1", "nodes"), node)
    yield node["metadata"]["name"]
    await kube.delete(resource_path("v1", "nodes", name=node["metadata"]["name"]))


async def test_a_group_on_a_lost_node_is_reported_before_anything_is_deleted(
    kube: Kube, ns: str, own_node: str, kubectl_lws: Cli
) -> None:
    name = "sick"
    body = budget_body(name, None, replicas=1)
    label = own_node.rsplit("-", 1)[0]
    # Tolerated for an hour: Kubernetes' taint eviction stays out of the test's way.
    stay = {
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 3600,
    }
    for role in ("leaderTemplate", "workerTemplate"):
        body["spec"]["leaderWorkerTemplate"][role]["spec"]["nodeSelector"] = {"sick": label}
        body["spec"]["leaderWorkerTemplate"][role]["spec"]["tolerations"] = [stay]
    lws = await create_available(kube, ns, body)
    before = group_uids(await pods_now(kube, ns, name), 0)

    await lose_node(kube, own_node)
    reports = await events(kube, ns, lws["metadata"]["uid"], "GroupNodeNotReady", count=2)
    assert sorted(e["note"] for e in reports) == [
        f"group 0: pod {pod} on node {own_node}: unreachable (Ready=Unknown); the group is "
        "recovered per its restart policy once Kubernetes marks the pod failed or deletes it"
        for pod in (f"{name}-0", f"{name}-0-1")
    ]
    assert all(e["type"] == "Warning" for e in reports)
    status = await kubectl_lws("status", name, "-n", ns)
    assert f"on node {own_node}: unreachable (Ready=Unknown)" in status, status
    assert group_uids(await pods_now(kube, ns, name), 0) == before, "nothing deleted for it"

    # Kubernetes marks the pod failed: now the restart policy recreates the group.
    await fail_pod(kube, ns, f"{name}-0-1")
    cm = await wait_history(
        kube, ns, name, lambda cm: total(cm, 0) == 1, "recreated after the pod failed"
    )
    (entry,) = recreations(cm, 0)
    assert entry["trigger"] == "failed"
    assert any(own_node in n and "unreachable" in n for n in entry["nodes"]), entry
    # No log read was tried on the lost node: it would only have waited for the timeout.
    assert entry["failures"][0]["logError"] == (
        f"log unavailable: node {own_node} is unreachable (Ready=Unknown)"
    ), entry


# ---- publishNotReadyAddresses -------------------------------------------------------------


async def endpoints_of(
    kube: Kube, ns: str, service: str, done: Callable[[list[dict[str, Any]]], bool], what: str
) -> list[dict[str, Any]]:
    def flat(objs: Objects) -> list[dict[str, Any]]:
        return [e for s in objs.values() for e in s.get("endpoints") or []]

    objs = await wait_for_objects(
        kube,
        resource_path("discovery.k8s.io/v1", "endpointslices", namespace=ns),
        lambda objs: done(flat(objs)),
        timeout=60,
        what=f"EndpointSlices of {service}: {what}",
        label_selector=f"kubernetes.io/service-name={service}",
    )
    return flat(objs)


def dns_name(endpoints: list[dict[str, Any]], hostname: str) -> dict[str, Any] | None:
    """The endpoint DNS publishes as <hostname>.<service>: one with that hostname that is
    ready (CoreDNS serves records of ready endpoints; publishNotReadyAddresses makes the
    EndpointSlice controller report every endpoint ready)."""
    return next(
        (
            e
            for e in endpoints
            if e.get("hostname") == hostname and (e.get("conditions") or {}).get("ready")
        ),
        None,
    )


@pytest.mark.parametrize("publish", [None, True, False])
async def test_publish_not_ready_addresses_gives_an_unready_leader_a_dns_record(
    kube: Kube, ns: str, publish: bool | None
) -> None:
    name = {None: "dns-unset", True: "dns-on", False: "dns-off"}[publish]
    body = budget_body(name, None, replicas=1)
    body["spec"]["leaderWorkerTemplate"]["restartPolicy"] = "None"  # unready is not a failure
    body["spec"]["networkConfig"] = {"subdomainPolicy": "UniquePerReplica"}
    if publish is not None:
        body["spec"]["networkConfig"]["publishNotReadyAddresses"] = publish
    await create_available(kube, ns, body)
    service = f"{name}-0"
    assert await kube.get_or_none(history_path(ns, history_name(name))) is None, (
        "an LWS that never failed has no history ConfigMap"
    )
    svc = await kube.get(resource_path("v1", "services", namespace=ns, name=service))
    # (false is omitted by the API server: a Go bool with omitempty)
    assert bool(svc["spec"].get("publishNotReadyAddresses")) is (publish is not False)

    # The leader is running but not Ready (as while an init container or a preflight runs).
    await make_unready(kube, ns, f"{name}-0")
    if publish is False:
        eps = await endpoints_of(
            kube,
            ns,
            service,
            lambda eps: any(
                e.get("hostname") == name + "-0" and not e["conditions"].get("ready") for e in eps
            ),
            "the leader not ready",
        )
        assert dns_name(eps, f"{name}-0") is None
    else:
        eps = await endpoints_of(
            kube,
            ns,
            service,
            lambda eps: any(e.get("hostname") == name + "-0" for e in eps),
            "the leader listed",
        )
        pod = await kube.get(resource_path("v1", "pods", namespace=ns, name=f"{name}-0"))
        assert not any(
            x["type"] == "Ready" and x["status"] == "True" for x in pod["status"]["conditions"]
        )
        record = dns_name(eps, f"{name}-0")
        assert record is not None and record["addresses"] == [pod["status"]["podIP"]], eps

    # The field is applied to the existing Services when it changes.
    flipped = publish is False
    await kube.patch(
        lws_path(ns, name), {"spec": {"networkConfig": {"publishNotReadyAddresses": flipped}}}
    )
    await wait_for_objects(
        kube,
        resource_path("v1", "services", namespace=ns),
        lambda objs: (
            objs.get(f"{ns}/{service}", {}).get("spec", {}).get("publishNotReadyAddresses", False)
            is flipped
        ),
        timeout=30,
        what=f"Service {service} publishNotReadyAddresses={flipped}",
        field_selector=f"metadata.name={service}",
    )


# ---- takeover between two replicas, with the deployed RBAC ----------------------------------

RBAC = Path(__file__).resolve().parents[3] / "deploy" / "base" / "rbac.yaml"


async def least_privilege_kubeconfig(
    kube: Kube, admin: Path, out: Path, ns: str, suffix: str
) -> Path:
    """A ServiceAccount of ``ns`` bound to deploy/base/rbac.yaml's manager and webhook
    configuration ClusterRoles (copies named ``…-<suffix>``) and the leader-election Role in
    ``ns``: the operator's own privileges, nothing more."""
    from tests.cluster.deploy.helpers import service_account_token, write_token_kubeconfig

    docs = {d["metadata"]["name"]: d for d in yaml.safe_load_all(RBAC.read_text()) if d}
    rbac = "rbac.authorization.k8s.io/v1"
    await kube.create(
        resource_path("v1", "serviceaccounts", namespace=ns), {"metadata": {"name": "op"}}
    )
    subject = [{"kind": "ServiceAccount", "name": "op", "namespace": ns}]
    for role in ("lws-manager-role", "lws-webhook-configuration-role"):
        name = f"{role}-{suffix}"
        await kube.create(
            resource_path(rbac, "clusterroles"),
            {"metadata": {"name": name}, "rules": docs[role]["rules"]},
        )
        await kube.create(
            resource_path(rbac, "clusterrolebindings"),
            {
                "metadata": {"name": name},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": name,
                },
                "subjects": subject,
            },
        )
    lease = docs["lws-leader-election-role"]
    await kube.create(
        resource_path(rbac, "roles", namespace=ns),
        {"metadata": {"name": "lease"}, "rules": lease["rules"]},
    )
    await kube.create(
        resource_path(rbac, "rolebindings", namespace=ns),
        {
            "metadata": {"name": "lease"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "lease"},
            "subjects": subject,
        },
    )
    token = await service_account_token(kube, ns, "op")
    return write_token_kubeconfig(admin, out, token)


async def test_the_history_survives_a_takeover_with_least_privilege(
    kube: Kube,
    ns: str,
    kubeconfig: Path,
    failures_operator: OperatorProcess,
    config_file: Path,
    tmp_path: Path,
) -> None:
    """Two replicas with leader election and the deployed RBAC: the leader records a
    recreation and is SIGKILLed; the standby takes over and continues the same budget."""
    from tests.cluster.deploy.helpers import denials, wait_holder

    suffix = secrets.token_hex(3)
    own = await least_privilege_kubeconfig(kube, kubeconfig, tmp_path / "op.kubeconfig", ns, suffix)
    await failures_operator.stop()
    replicas: dict[str, OperatorProcess] = {}
    try:
        for name in ("op-a", "op-b"):
            os.environ["POD_NAME"] = name
            try:
                replicas[name] = await start_operator(
                    kube,
                    own,
                    tmp_path / f"{name}.log",
                    "--leader-elect",
                    "--operator-namespace",
                    ns,
                    "--config",
                    str(config_file),
                    "--metrics-bind-address",
                    "0",
                    "--health-probe-bind-address",
                    "0",
                )
            finally:
                del os.environ["POD_NAME"]
            if name == "op-a":
                await wait_holder(kube, ns, lambda h: h.startswith("op-a_"), timeout=30)
        lws_name = "takeover"
        await create_available(kube, ns, budget_body(lws_name, 2, replicas=1))
        pods = await pods_now(kube, ns, lws_name)
        old = group_uids(pods, 0)
        await crash(kube, ns, f"{lws_name}-0-1", 1)
        await wait_history(kube, ns, lws_name, has_total(0, 1), "recreation 1 by op-a")
        pods = await wait_group_running(kube, ns, lws_name, 0, 2, old)

        replicas["op-a"].proc.send_signal(signal.SIGKILL)
        await replicas["op-a"].proc.wait()
        await wait_holder(kube, ns, lambda h: h.startswith("op-b_"), timeout=60)
        old = group_uids(pods, 0)
        await crash(kube, ns, f"{lws_name}-0-1", 2)
        cm = await wait_history(kube, ns, lws_name, has_total(0, 2), "recreation 2 by op-b")
        g = groups_of(cm)[0]
        assert (g["restarts"], g["streak"]) == (2, 2), g
        pods = await wait_group_running(kube, ns, lws_name, 0, 2, old)
        kept = group_uids(pods, 0)
        await crash(kube, ns, f"{lws_name}-0-1", 3)
        await wait_failed(kube, ns, lws_name, "Failed after 2 recreations over two replicas")
        assert group_uids(await pods_now(kube, ns, lws_name), 0) == kept
        replicas["op-b"].check_alive()
        forbidden = denials(replicas["op-b"].log.read_text(errors="replace"))
        assert not forbidden, forbidden[:5]
    finally:
        for op in replicas.values():
            if op.proc.returncode is None:
                await op.stop()
        rbac = "rbac.authorization.k8s.io/v1"
        for role in ("lws-manager-role", "lws-webhook-configuration-role"):
            for plural in ("clusterrolebindings", "clusterroles"):
                await kube.delete(resource_path(rbac, plural, name=f"{role}-{suffix}"))
        await failures_operator.restart(kube)


# ---- log tails through the real pods/log API ------------------------------------------------


@dataclasses.dataclass
class FakeKubelet:
    """The log endpoint of a kubelet (``/containerLogs/<ns>/<pod>/<container>``, honouring
    ``tailLines`` and ``limitBytes`` as the kubelet does), on 127.0.0.1 over TLS, for a node
    no kwok serves: the API server proxies ``pods/<pod>/log`` to it."""

    port: int = 0
    asked: list[dict[str, str]] = dataclasses.field(default_factory=list)
    lines: int = 2000

    def log(self, container: str) -> list[str]:
        return [f"{container} line {i:05d} " + "x" * 180 for i in range(self.lines)]

    async def handle(self, request: web.Request) -> web.Response:
        self.asked.append({"path": request.path, **request.query})
        lines = self.log(request.match_info["container"])
        if tail_lines := request.query.get("tailLines"):
            lines = lines[-int(tail_lines) :]
        body = "".join(f"{line}\n" for line in lines).encode()
        if limit := request.query.get("limitBytes"):
            body = body[: int(limit)]
        return web.Response(body=body, content_type="text/plain")


@pytest.fixture
async def log_node(kube: Kube, tmp_path: Path) -> AsyncIterator[tuple[str, FakeKubelet]]:
    ca = pki.make_ca("fake-kubelet-ca")
    pair = pki.issue_cert(ca, "fake-kubelet", ip_addresses=("127.0.0.1",))
    pair.write(tmp_path / "tls.crt", tmp_path / "tls.key")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    kubelet = FakeKubelet()
    app = web.Application()
    app.router.add_get("/containerLogs/{ns}/{pod}/{container}", kubelet.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    kubelet.port = runner.addresses[0][1]
    name = f"logs-{secrets.token_hex(3)}"
    await kube.create(resource_path("v1", "nodes"), {"metadata": {"name": name}})
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    status = {
        "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet.port}},
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "lastHeartbeatTime": now,
                "lastTransitionTime": now,
            }
        ],
    }
    await kube.patch(
        resource_path("v1", "nodes", name=name, subresource="status"), {"status": status}
    )
    try:
        yield name, kubelet
    finally:
        await kube.delete(resource_path("v1", "nodes", name=name))
        await runner.cleanup()


async def test_log_tails_are_read_through_the_api_and_bounded(
    kube: Kube, ns: str, log_node: tuple[str, FakeKubelet], kubectl_lws: Cli
) -> None:
    node, kubelet = log_node
    name = "tails"
    body = budget_body(name, None, replicas=1)
    for role in ("leaderTemplate", "workerTemplate"):
        body["spec"]["leaderWorkerTemplate"][role]["spec"]["nodeName"] = node
    await kube.create(lws_path(ns), body)
    pods = await wait_pods(kube, ns, name, lambda objs: len(objs) == 2, "both pods bound")
    for key in pods:  # no kwok on this node: report them running, as its kubelet would
        await make_ready(kube, ns, key.split("/")[1])
    await wait_lws(kube, ns, name, lambda o: is_available(o, 1), "Available")
    await crash(kube, ns, f"{name}-0-1", 1)
    cm = await wait_history(kube, ns, name, has_total(0, 1), "recreated with its evidence")

    (failure,) = recreations(cm, 0)[0]["failures"]
    assert failure["pod"] == f"{name}-0-1" and "logError" not in failure, failure
    tail = cm["data"][failure["log"]]
    (asked,) = [a for a in kubelet.asked if a["path"].endswith(f"/{name}-0-1/worker")]
    assert asked["path"] == f"/containerLogs/{ns}/{name}-0-1/worker"
    assert (asked["previous"], asked["tailLines"], asked["limitBytes"]) == ("true", "50", "65536")
    # The end of the log, whole lines, within 4 KiB (of 50 lines of ~200 bytes asked for).
    whole = "\n".join(kubelet.log("worker"))
    assert whole.endswith(tail) and len(tail.encode()) <= 4096, len(tail.encode())
    assert tail.splitlines()[-1].startswith("worker line 01999 ")
    assert len(tail.encode()) > 4096 - 200, "as much as fits"
    logs = await kubectl_lws("logs", name, "0", "-n", ns)
    assert logs.rstrip("\n").endswith(tail.splitlines()[-1]), logs[-500:]
