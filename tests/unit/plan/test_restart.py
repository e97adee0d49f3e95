import datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lws_operator.api import constants as c
from lws_operator.api.models import RestartPolicy
from lws_operator.plan.lws.groups import failure, observe_groups
from lws_operator.plan.lws.restart import (
    Lost,
    Recreations,
    node_lost,
    plan_recreations,
    stuck_pods,
    undecided,
)

NOW = datetime.datetime(2026, 11, 30, 12, 0, tzinfo=datetime.UTC)
NOW_S = "2026-11-30T12:00:00Z"


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


def recreations(pods: dict[str, Any], stss: dict[str, Any], **kw: Any) -> Recreations:
    groups = observe_groups(
        lws_name="s", count=2, leader_sts_uid="leader-sts", pods=pods, statefulsets=stss
    )
    return plan_recreations(
        policy=kw.pop("policy", RestartPolicy.RECREATE_GROUP_ON_POD_RESTART),
        lws_annotations=kw.pop("annotations", {}),
        lws_name="s",
        size=3,
        groups=groups,
        pods=pods,
        **kw,
    )


def plan(pods: dict[str, Any], stss: dict[str, Any], **kw: Any) -> list[tuple[int, str]]:
    return [(p.index, p.culprit) for p in recreations(pods, stss, **kw).groups]


def lost(name: str, owner: str, *, group: int = 1, key: str = "k", phase: str = "Running") -> Lost:
    record = Lost.of(pod(name, owner, group=group, worker=1, key=key, phase=phase))
    assert record is not None
    return record


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
    gone = lost("s-1-1", "s-1-sts-uid")
    out = recreations(pods, stss, lost=[gone])
    assert [(p.index, p.culprit, p.why) for p in out.groups] == [(1, "s-1-1", "deleted")]
    assert out.groups[0].lost == {gone.uid} and not out.dropped  # settled by the recreation


def test_a_failed_pod_deleted_after_its_failure_is_recreated_as_failed() -> None:
    """Its StatefulSet (or the pod GC) deletes a Failed pod: whether the pass sees it deleting
    or already gone, the trigger is its failure, not the deletion that followed."""
    deleting = pod("s-1-1", "s-1-sts-uid", group=1, worker=1, phase="Failed", deleting=NOW_S)
    pods, stss = world(s_1_1=deleting)
    assert [(p.index, p.why) for p in recreations(pods, stss).groups] == [(1, "failed")]
    del pods["s-1-1"]
    gone = lost("s-1-1", "s-1-sts-uid", phase="Failed")
    assert [(p.index, p.why) for p in recreations(pods, stss, lost=[gone]).groups] == [
        (1, "failed")
    ]


def test_lost_pods_of_another_incarnation_are_dropped() -> None:
    pods, stss = world()
    older = lost("s-1-1", "gone-sts-uid")
    out = recreations(pods, stss, lost=[older])
    assert out.groups == () and out.dropped == {older.uid}


def test_lost_pods_wait_until_their_group_has_an_incarnation_to_judge_them_by() -> None:
    pods, stss = world()
    del stss["s-1"]  # the new leader's workers are not created yet
    waiting = lost("s-1-1", "old-sts-uid")
    out = recreations(pods, stss, lost=[waiting])
    assert out.groups == () and not out.dropped


def test_after_start_drops_a_deletion_seen_while_the_group_starts() -> None:
    """Parity fix: upstream acts only on the event in hand. A worker deleted while another is
    Pending is skipped, and must not recreate the group once all its pods run, later."""
    after = RestartPolicy.RECREATE_GROUP_AFTER_START
    pods, stss = world(s_1_2=pod("s-1-2", "s-1-sts-uid", group=1, worker=2, phase="Pending"))
    del pods["s-1-1"]
    gone = lost("s-1-1", "s-1-sts-uid")
    out = recreations(pods, stss, policy=after, lost=[gone])
    assert out.groups == () and out.dropped == {gone.uid}
    running, stss = world()  # the replacement scheduled, everything Running, nothing lost
    assert plan(running, stss, policy=after) == []


def test_lost_pods_are_dropped_when_nothing_recreates_groups() -> None:
    pods, stss = world()
    gone = lost("s-1-1", "s-1-sts-uid")
    beyond = lost("s-5-1", "s-5-sts-uid", group=5)
    assert recreations(pods, stss, policy=RestartPolicy.NONE, lost=[gone]).dropped == {gone.uid}
    assert recreations(pods, stss, lost=[beyond]).dropped == {beyond.uid}  # scaled down
    rolled = lost("s-1-1", "s-1-sts-uid", key="old")
    out = recreations(pods, stss, lost=[rolled])
    assert out.groups == () and out.dropped == {rolled.uid}


def test_leader_deletions_leave_no_lost_record() -> None:
    assert Lost.of(pod("s-1", "leader-sts", group=1)) is None


def test_init_container_restarts_count() -> None:
    p = pod("p", "o")
    p["status"]["initContainerStatuses"] = [{"name": "init", "restartCount": 1}]
    assert failure(p) == "restarted"


def test_a_leader_being_deleted_is_already_being_recreated() -> None:
    pods, stss = world(s_0=pod("s-0", "leader-sts", restarts=1, deleting="2026-11-30T12:00:00Z"))
    assert plan(pods, stss) == []


@given(
    st.integers(0, 5),
    st.sampled_from(["Running", "Pending", "Succeeded", "Failed"]),
    st.sampled_from([None, NOW_S]),
)
def test_failure_rules(restarts: int, phase: str, deleting: str | None) -> None:
    why = failure(pod("p", "o", phase=phase, restarts=restarts, deleting=deleting))
    if phase == "Failed":
        assert why == "failed"
    elif deleting:
        assert why == "deleted"
    elif phase in ("Running", "Pending") and restarts:
        assert why == "restarted"
    else:
        assert why is None


def test_stuck_terminating_pods_of_our_groups_only() -> None:
    on_time = pod("a", "ours", deleting="2026-11-30T11:59:50Z")
    overdue = pod("b", "ours", deleting="2026-11-30T11:58:00Z")
    foreign = pod("f", "someone-else", deleting="2026-11-30T11:58:00Z")
    for p in (on_time, overdue, foreign):
        p["spec"] = {"nodeName": "gone"}
    healthy = pod("h", "ours", deleting="2026-11-30T11:58:00Z")
    healthy["spec"] = {"nodeName": "fine"}
    fine = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}

    def ours(p: Any) -> bool:
        return bool(p["metadata"]["ownerReferences"][0]["uid"] == "ours")

    out = stuck_pods([on_time, overdue, foreign, healthy], ours=ours, nodes={"fine": fine}, now=NOW)
    assert [p["metadata"]["name"] for p in out.release] == ["b"]
    assert out.wait == 20.0
    assert "force-deleted" in out.event(overdue).note


def test_lost_nodes() -> None:
    ready = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    assert not node_lost(ready)
    assert node_lost(None)
    assert node_lost({"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}})
    out = {**ready, "spec": {"taints": [{"key": "node.kubernetes.io/out-of-service"}]}}
    assert node_lost(out)


def test_pods_made_by_our_statefulsets_of_any_incarnation_are_ours() -> None:
    from lws_operator.plan.lws.groups import made_by_groups

    lws_ref = {"kind": "LeaderWorkerSet", "uid": "lws-uid", "controller": True}
    leader_ref = {"kind": "Pod", "name": "s-0", "uid": "leader", "controller": True}
    stss = {
        "s": {"metadata": {"name": "s", "uid": "lsts", "ownerReferences": [lws_ref]}},
        "s-0": {"metadata": {"name": "s-0", "uid": "wsts", "ownerReferences": [leader_ref]}},
        "s-1": {"metadata": {"name": "s-1", "uid": "foreign"}},
    }

    def made_by(name: str, uid: str) -> bool:
        owned = {
            "metadata": {
                "ownerReferences": [
                    {"kind": "StatefulSet", "name": name, "uid": uid, "controller": True}
                ]
            }
        }
        return made_by_groups(owned, lws_name="s", lws_uid="lws-uid", statefulsets=stss)

    assert made_by("s", "lsts") and made_by("s-0", "wsts")
    assert made_by("s-0", "previous-incarnation")  # its StatefulSet is gone already
    assert not made_by("s-1", "foreign")  # a look-alike someone else owns
    assert not made_by("other", "x")
    assert not made_by_groups({"metadata": {}}, lws_name="s", lws_uid="lws-uid", statefulsets=stss)


def _lost(name: str, uid: str) -> Lost:
    return Lost(name=name, uid=uid, owner_uid="sts", group_index="0", revision="r")


def test_undecided_leaves_out_what_was_decided_and_forgets_what_the_cache_dropped() -> None:
    a, b = _lost("w-0-1", "a"), _lost("w-0-2", "b")
    assert undecided((a, b), set()) == ((a, b), set())
    assert undecided((a, b), {"a"}) == ((b,), {"a"})
    assert undecided((b,), {"a"}) == ((b,), set()), "a's record is gone: forgotten"
    assert undecided((), {"a", "b"}) == ((), set())


@given(st.sets(st.sampled_from("abcdef")), st.sets(st.sampled_from("abcdef")))
def test_undecided_is_the_records_not_decided_and_remembers_only_shown_uids(
    shown: set[str], decided: set[str]
) -> None:
    lost = tuple(_lost(f"w-{u}", u) for u in sorted(shown))
    left, kept = undecided(lost, decided)
    assert {r.uid for r in left} == shown - decided
    assert kept == decided & shown


def test_a_group_is_deleted_leader_first_then_the_rest_each_by_its_uid() -> None:
    from lws_operator.plan.lws.restart import group_deletion

    def obj(name: str, deleting: bool = False) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name, "uid": f"{name}-uid"}
        if deleting:
            meta["deletionTimestamp"] = NOW_S
        return {"metadata": meta}

    leader, sts = obj("lws-0"), obj("lws-0-sts")
    members = (leader, obj("lws-0-1"), obj("lws-0-2", deleting=True), obj("lws-0-3"))
    got = [
        (w.verb, w.kind, w.name, w.uid, w.propagation) for w in group_deletion(leader, sts, members)
    ]
    assert got == [
        ("delete", "Pod", "lws-0", "lws-0-uid", "Background"),
        ("delete", "StatefulSet", "lws-0-sts", "lws-0-sts-uid", "Foreground"),
        ("delete", "Pod", "lws-0-1", "lws-0-1-uid", "Background"),
        ("delete", "Pod", "lws-0-3", "lws-0-3-uid", "Background"),
    ]
    assert [w.name for w in group_deletion(leader, None, (leader,))] == ["lws-0"]
    # A grace: each pod's never longer than its own (30 s when unset); none for the sts.
    leader["spec"] = {"terminationGracePeriodSeconds": 0}
    members[3]["spec"] = {"terminationGracePeriodSeconds": 10}
    graces = [(w.name, w.grace_seconds) for w in group_deletion(leader, sts, members, grace=5)]
    assert graces == [("lws-0", 0), ("lws-0-sts", None), ("lws-0-1", 5), ("lws-0-3", 5)]
    assert {w.grace_seconds for w in group_deletion(leader, sts, members)} == {None}


@pytest.mark.parametrize(
    ("value", "configured", "want"),
    [(None, 1, 1), (None, None, None), ("pod", 1, None), ("7", 1, 7), ("1", None, 1)],
)
def test_failed_group_grace_from_the_annotation_or_the_configuration(
    value: str | None, configured: int | None, want: int | None
) -> None:
    from lws_operator.plan.lws.restart import failed_group_grace

    annotations = {} if value is None else {c.FAILED_GROUP_GRACE_ANNOTATION: value}
    assert failed_group_grace(annotations, configured) == (want, None)


@pytest.mark.parametrize("value", ["0", "-1", "1.5", "1s", "", "Pod"])
def test_an_invalid_failed_group_grace_is_named_and_the_configuration_applies(value: str) -> None:
    from lws_operator.plan.lws.restart import failed_group_grace

    grace, error = failed_group_grace({c.FAILED_GROUP_GRACE_ANNOTATION: value}, 3)
    assert grace == 3 and error is not None
    assert error.startswith(
        f"metadata.annotations[{c.FAILED_GROUP_GRACE_ANNOTATION}]: Invalid value: {value!r}: "
    )
