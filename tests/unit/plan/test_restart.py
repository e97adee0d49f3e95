import datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from lws_operator.api import constants as c
from lws_operator.api.models import RestartPolicy
from lws_operator.plan.groups import observe_groups
from lws_operator.plan.restart import (
    failure,
    next_overdue,
    node_lost,
    overdue_terminating,
    plan_recreations,
)

NOW = datetime.datetime(2026, 11, 30, 12, 0, tzinfo=datetime.UTC)


def pod(
    name: str,
    owner: str,
    *,
    group: int = 0,
    worker: int = 0,
    key: str = "k",
    phase: str = "Running",
    restarts: int = 0,
    deleting: str | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "uid": f"{name}-uid",
        "labels": {
            c.GROUP_INDEX_LABEL: str(group),
            c.WORKER_INDEX_LABEL: str(worker),
            c.REVISION_KEY: key,
        },
        "ownerReferences": [{"uid": owner, "controller": True}],
    }
    if deleting:
        meta["deletionTimestamp"] = deleting
    return {
        "metadata": meta,
        "status": {
            "phase": phase,
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "c", "restartCount": restarts}],
        },
    }


def sts(name: str, owner: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "uid": f"{name}-sts-uid",
            "labels": {c.REVISION_KEY: "k"},
            "ownerReferences": [{"uid": owner, "controller": True}],
        },
        "spec": {"replicas": 2},
        "status": {"availableReplicas": 2},
    }


def world(**changes: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Two groups of 3: s-0 (s-0-1, s-0-2) and s-1 (s-1-1, s-1-2)."""
    pods: dict[str, Any] = {}
    stss: dict[str, Any] = {}
    for g in range(2):
        leader = f"s-{g}"
        pods[leader] = pod(leader, "leader-sts", group=g)
        stss[leader] = sts(leader, f"{leader}-uid")
        for w in (1, 2):
            pods[f"{leader}-{w}"] = pod(f"{leader}-{w}", f"{leader}-sts-uid", group=g, worker=w)
    for name, value in changes.items():
        pods[name.replace("_", "-")] = value
    return pods, stss


def plan(pods: dict[str, Any], stss: dict[str, Any], **kw: Any) -> list[tuple[int, str]]:
    groups = observe_groups(
        lws_name="s", count=2, leader_sts_uid="leader-sts", pods=pods, statefulsets=stss
    )
    out = plan_recreations(
        policy=kw.pop("policy", RestartPolicy.RECREATE_GROUP_ON_POD_RESTART),
        lws_annotations=kw.pop("annotations", {}),
        size=3,
        groups=groups,
        pods=pods,
        **kw,
    )
    return [(p.index, p.culprit) for p in out]


def test_a_worker_restart_recreates_its_group_only() -> None:
    pods, stss = world(s_1_2=pod("s-1-2", "s-1-sts-uid", group=1, worker=2, restarts=1))
    assert plan(pods, stss) == [(1, "s-1-2")]


def test_failed_deleted_and_leader_failures_count() -> None:
    pods, stss = world(s_0_1=pod("s-0-1", "s-0-sts-uid", worker=1, phase="Failed"))
    assert plan(pods, stss) == [(0, "s-0-1")]
    pods, stss = world(s_0_1=pod("s-0-1", "s-0-sts-uid", worker=1, deleting="2026-11-30T12:00:00Z"))
    assert plan(pods, stss) == [(0, "s-0-1")]
    pods, stss = world(s_1=pod("s-1", "leader-sts", group=1, restarts=2))
    assert plan(pods, stss) == [(1, "s-1")]


def test_none_and_default_never_recreate() -> None:
    pods, stss = world(s_1_2=pod("s-1-2", "s-1-sts-uid", group=1, worker=2, restarts=1))
    assert plan(pods, stss, policy=RestartPolicy.NONE) == []
    assert plan(pods, stss, policy=RestartPolicy.DEFAULT) == []


def test_pods_of_a_previous_incarnation_never_trigger() -> None:
    """#805: a terminating worker of the group's previous worker StatefulSet is not a member."""
    stale = pod("s-0-1", "old-sts-uid", worker=1, restarts=3, deleting="2026-11-30T12:00:00Z")
    pods, stss = world(s_0_1=stale)
    assert plan(pods, stss) == []


def test_a_worker_of_another_revision_is_being_rolled_not_failing() -> None:
    pods, stss = world(s_0_1=pod("s-0-1", "s-0-sts-uid", worker=1, key="old", restarts=1))
    assert plan(pods, stss) == []


def test_after_start_waits_while_pending_or_incomplete() -> None:
    restarted = pod("s-0", "leader-sts", restarts=1)
    pending = pod("s-0-2", "s-0-sts-uid", worker=2, phase="Pending")
    pods, stss = world(s_0=restarted, s_0_2=pending)
    after = RestartPolicy.RECREATE_GROUP_AFTER_START
    assert plan(pods, stss, policy=after) == []
    assert plan(pods, stss) == [(0, "s-0")]  # RecreateGroupOnPodRestart does not wait
    legacy = {c.RECREATE_GROUP_AFTER_START_ANNOTATION: ""}
    assert plan(pods, stss, annotations=legacy) == []
    pods, stss = world(s_0=restarted)
    del pods["s-0-2"]
    assert plan(pods, stss, policy=after) == []
    pods, stss = world(s_0=restarted)
    assert plan(pods, stss, policy=after) == [(0, "s-0")]


def test_a_pod_deleted_before_we_saw_it_terminating_still_counts() -> None:
    pods, stss = world()
    del pods["s-1-1"]
    assert plan(pods, stss, lost_pods=[("s-1-1", "s-1-sts-uid")]) == [(1, "s-1-1")]
    assert plan(pods, stss, lost_pods=[("s-1-1", "gone-sts-uid")]) == []


def test_a_leader_being_deleted_is_already_being_recreated() -> None:
    pods, stss = world(s_0=pod("s-0", "leader-sts", restarts=1, deleting="2026-11-30T12:00:00Z"))
    assert plan(pods, stss) == []


@given(st.integers(0, 5), st.sampled_from(["Running", "Pending", "Succeeded", "Failed"]))
def test_failure_rules(restarts: int, phase: str) -> None:
    why = failure(pod("p", "o", phase=phase, restarts=restarts))
    if phase == "Failed":
        assert why == "failed"
    elif phase in ("Running", "Pending") and restarts:
        assert why == "restarted"
    else:
        assert why is None


def test_stuck_terminating_pods_and_lost_nodes() -> None:
    on_time = pod("a", "o", deleting="2026-11-30T11:59:50Z")
    overdue = pod("b", "o", deleting="2026-11-30T11:58:00Z")
    pods = {"a": on_time, "b": overdue, "c": pod("c", "o")}
    assert [p["metadata"]["name"] for p, _ in overdue_terminating(pods, NOW)] == ["b"]
    assert next_overdue(pods, NOW) == 20.0
    ready = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    assert not node_lost(ready)
    assert node_lost(None)
    assert node_lost({"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}})
    out = {**ready, "spec": {"taints": [{"key": "node.kubernetes.io/out-of-service"}]}}
    assert node_lost(out)
