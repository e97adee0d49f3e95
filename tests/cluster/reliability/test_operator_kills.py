"""SIGKILL the operator at points chosen by events (a watch sees them) during create, scale
up/down, a rollout with surge, a group recreation and the LWS deletion; restart it; the
cluster converges to exactly the expected objects and no group is recreated that did not
need it. A few points run in ``make test``; all of them with ``make test-reliability``."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from lws_operator.api import constants as c
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_testbed.operator_process import OperatorProcess
from lws_testbed.simulate import restart_container
from lws_testbed.wait import Objects
from tests.cluster.controller.helpers import container, create_available, lws_body, lws_path
from tests.cluster.reliability.harness import (
    assert_converged,
    assert_gone,
    group_uids,
    labels,
    pods_of,
    recreate_events,
    start_kill_when,
    tracebacks,
)

NAME = "k"
REPLICAS, SIZE = 3, 2


@pytest.fixture(scope="module")
async def own_operator(
    replace_session_operator: Callable[..., contextlib.AbstractAsyncContextManager[Any]],
) -> AsyncIterator[OperatorProcess]:
    """One operator process of our own for the module (the session's is paused meanwhile),
    killed and restarted by the tests."""
    async with replace_session_operator() as op:
        yield op


def _sts(name: str) -> Callable[[Objects], bool]:
    return lambda objs: any(o["metadata"]["name"] == name for o in objs.values())


def _pod(name: str) -> Callable[[Objects], bool]:
    return lambda objs: any(o["metadata"]["name"] == name for o in objs.values())


def _leader_sts(check: Callable[[dict[str, Any]], bool]) -> Callable[[Objects], bool]:
    return lambda objs: any(o["metadata"]["name"] == NAME and check(o) for o in objs.values())


def _partition(sts: dict[str, Any]) -> int:
    spec = sts.get("spec") or {}
    return int(
        ((spec.get("updateStrategy") or {}).get("rollingUpdate") or {}).get("partition") or 0
    )


def _replicas(sts: dict[str, Any]) -> int:
    return int((sts.get("spec") or {}).get("replicas") or 0)


@dataclass(frozen=True)
class KillPoint:
    id: str
    scenario: str  # create | scale-up | scale-down | rollout | recreate | delete
    kind: str  # statefulsets | pods | controllerrevisions | events | lws
    predicate: Callable[[Objects], bool]
    fast: bool = False


# The revision key of the initial spec, filled in by the scenario (rollout predicates compare).
_initial: dict[str, str] = {}


def _new_revision(objs: Objects) -> bool:
    return len({labels(o).get(c.REVISION_KEY) for o in objs.values()} - {None}) >= 2


def _leader_rolled(sts: dict[str, Any]) -> bool:
    return labels(sts).get(c.REVISION_KEY) not in (None, _initial.get("key"))


def _worker_rolled(group: int) -> Callable[[Objects], bool]:
    return lambda objs: any(
        o["metadata"]["name"] == f"{NAME}-{group}"
        and labels(o).get(c.REVISION_KEY) not in (None, _initial.get("key"))
        and not o["metadata"].get("deletionTimestamp")
        for o in objs.values()
    )


def _event(reason: str) -> Callable[[Objects], bool]:
    return lambda objs: any(o.get("reason") == reason for o in objs.values())


def _deleting(objs: Objects) -> bool:
    return any(o["metadata"].get("deletionTimestamp") for o in objs.values())


def _leader_pod_replaced(objs: Objects) -> bool:
    old = _initial.get("leader1")
    return any(
        o["metadata"]["name"] == f"{NAME}-1" and o["metadata"]["uid"] != old for o in objs.values()
    )


def _leader_pod_deleting(objs: Objects) -> bool:
    return any(
        o["metadata"]["name"] == f"{NAME}-1" and o["metadata"].get("deletionTimestamp")
        for o in objs.values()
    )


KILL_POINTS = [
    # create
    KillPoint("create-revision", "create", "controllerrevisions", lambda o: bool(o), fast=True),
    KillPoint("create-leader-sts", "create", "statefulsets", _sts(NAME)),
    KillPoint("create-leader-pod-0", "create", "pods", _pod(f"{NAME}-0")),
    KillPoint("create-first-worker-sts", "create", "statefulsets", _sts(f"{NAME}-0"), fast=True),
    KillPoint("create-first-worker-pod", "create", "pods", _pod(f"{NAME}-0-1")),
    KillPoint("create-last-worker-sts", "create", "statefulsets", _sts(f"{NAME}-2")),
    KillPoint("create-progressing-event", "create", "events", _event("GroupsProgressing")),
    # scale up 3 -> 5
    KillPoint(
        "scale-up-leader-replicas",
        "scale-up",
        "statefulsets",
        _leader_sts(lambda s: _replicas(s) == 5),
        fast=True,
    ),
    KillPoint("scale-up-new-leader-pod", "scale-up", "pods", _pod(f"{NAME}-4")),
    KillPoint("scale-up-new-worker-sts", "scale-up", "statefulsets", _sts(f"{NAME}-3")),
    # scale down 3 -> 1
    KillPoint(
        "scale-down-leader-replicas",
        "scale-down",
        "statefulsets",
        _leader_sts(lambda s: _replicas(s) == 1),
    ),
    KillPoint("scale-down-pod-terminating", "scale-down", "pods", _deleting),
    # rollout with maxSurge 1
    KillPoint("rollout-new-revision", "rollout", "controllerrevisions", _new_revision, fast=True),
    KillPoint("rollout-leader-template", "rollout", "statefulsets", _leader_sts(_leader_rolled)),
    KillPoint(
        "rollout-surge-replicas",
        "rollout",
        "statefulsets",
        _leader_sts(lambda s: _replicas(s) == REPLICAS + 1),
    ),
    KillPoint("rollout-surge-leader-pod", "rollout", "pods", _pod(f"{NAME}-{REPLICAS}")),
    KillPoint(
        "rollout-partition-lowered",
        "rollout",
        "statefulsets",
        _leader_sts(lambda s: _partition(s) < REPLICAS and _leader_rolled(s)),
    ),
    KillPoint("rollout-first-group-workers-rolled", "rollout", "statefulsets", _worker_rolled(2)),
    KillPoint(
        "rollout-partition-zero",
        "rollout",
        "statefulsets",
        _leader_sts(lambda s: _partition(s) == 0 and _leader_rolled(s)),
    ),
    KillPoint("rollout-updating-event", "rollout", "events", _event("GroupsUpdating")),
    # group recreation after a worker container restart
    KillPoint("recreate-event", "recreate", "events", _event("RecreateGroup"), fast=True),
    KillPoint("recreate-leader-deleting", "recreate", "pods", _leader_pod_deleting),
    KillPoint("recreate-new-leader-pod", "recreate", "pods", _leader_pod_replaced),
    # deletion (foreground: the LWS keeps a deletionTimestamp until its dependents are gone)
    KillPoint("delete-timestamp", "delete", "lws", _deleting),
    KillPoint("delete-pods-terminating", "delete", "pods", _deleting),
]


def _params() -> list[Any]:
    return [
        pytest.param(p, id=p.id, marks=() if p.fast else (pytest.mark.reliability_full,))
        for p in KILL_POINTS
    ]


def _watch_path(kind: str, ns: str) -> tuple[str, dict[str, str]]:
    sel = {"label_selector": f"{c.SET_NAME_LABEL}={NAME}"}
    if kind == "lws":
        return lws_path(ns), {"field_selector": f"metadata.name={NAME}"}
    if kind == "events":
        return resource_path("events.k8s.io/v1", "events", namespace=ns), {}
    api = "v1" if kind == "pods" else "apps/v1"
    return resource_path(api, kind, namespace=ns), sel


def _body(replicas: int = REPLICAS) -> dict[str, Any]:
    body = lws_body(NAME, replicas=replicas, size=SIZE)
    body["spec"]["rolloutStrategy"] = {
        "type": "RollingUpdate",
        "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": 1},
    }
    return body


@pytest.mark.parametrize("point", _params())
async def test_kill_and_restart_converges(
    kube: Kube, namespace: str, own_operator: OperatorProcess, point: KillPoint
) -> None:
    ns, op = namespace, own_operator
    op.check_alive()
    log_start = len(op.log.read_text(errors="replace"))
    path, selectors = _watch_path(point.kind, ns)
    replicas = REPLICAS
    untouched: list[int] = []
    before: Objects = {}
    recreated: set[int] = set()
    _initial.clear()

    if point.scenario == "create":
        killer = start_kill_when(kube, op, path, point.predicate, what=point.id, **selectors)
        await kube.create(lws_path(ns), _body())
    else:
        lws = await create_available(kube, ns, _body())
        before = await pods_of(kube, ns, NAME)
        _initial["key"] = labels(before[f"{NAME}-0"]).get(c.REVISION_KEY, "")
        _initial["leader1"] = before[f"{NAME}-1"]["metadata"]["uid"]
        if point.scenario == "scale-up":
            replicas, untouched = 5, [0, 1, 2]
        elif point.scenario == "scale-down":
            replicas, untouched = 1, [0]
        elif point.scenario == "recreate":
            untouched, recreated = [0, 2], {1}
        killer = start_kill_when(kube, op, path, point.predicate, what=point.id, **selectors)
        if point.scenario in ("scale-up", "scale-down"):
            await kube.patch(lws_path(ns, NAME), {"spec": {"replicas": replicas}})
        elif point.scenario == "rollout":
            tpl = {"spec": {"containers": [container("worker", env=[{"name": "V", "value": "2"}])]}}
            await kube.patch(
                lws_path(ns, NAME), {"spec": {"leaderWorkerTemplate": {"workerTemplate": tpl}}}
            )
        elif point.scenario == "recreate":
            await restart_container(kube, ns, f"{NAME}-1-1")
        elif point.scenario == "delete":
            await kube.delete(lws_path(ns, NAME), propagation="Foreground")
        del lws

    try:
        await killer
    finally:
        if not killer.done():
            killer.cancel()
    await op.restart(kube)

    if point.scenario == "delete":
        await assert_gone(kube, ns, NAME)
    else:
        done = await assert_converged(kube, ns, NAME, replicas, SIZE)
        for g in untouched:
            assert group_uids(done.pods, g) == group_uids(before, g), (
                f"group {g} was recreated but did not need to be"
            )
        for g in recreated:
            assert not set(group_uids(done.pods, g).values()) & set(
                group_uids(before, g).values()
            ), f"group {g} should have been recreated with all-new pods"
        notes = await recreate_events(kube, ns, done.lws["metadata"]["uid"])
        # (a kill between the deletions and the event may leave the event out)
        assert len(notes) <= len(recreated), f"RecreateGroup events: {notes}"
    op.check_alive()
    new_log = op.log.read_text(errors="replace")[log_start:]
    assert not tracebacks(new_log), "\n\n".join(tracebacks(new_log))
