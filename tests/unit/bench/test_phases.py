"""bench/phases.py: a recovery's phases from the states a watch of the group's pods shows."""

from __future__ import annotations

from typing import Any

from bench.phases import Timeline


def pod(
    name: str,
    uid: str,
    *,
    node: str | None = "n1",
    restarts: int = 0,
    running: bool = True,
    sandbox: bool = True,
    ready: bool = True,
    deleting: bool = False,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": uid}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-07T00:00:00Z"
        meta["deletionGracePeriodSeconds"] = 1
    conditions = [
        {"type": "PodReadyToStartContainers", "status": str(sandbox)},
        {"type": "Ready", "status": str(ready)},
    ]
    state = {"running": {}} if running else {"waiting": {"reason": "ContainerCreating"}}
    return {
        "metadata": meta,
        "spec": {"nodeName": node} if node else {},
        "status": {
            "conditions": conditions,
            "containerStatuses": [{"restartCount": restarts, "state": state}],
        },
    }


def state(*pods: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["metadata"]["name"] + "/" + p["metadata"]["uid"]: p for p in pods}


OLD = {"a": pod("g-0", "a"), "b": pod("g-0-1", "b")}


def fresh(name: str, uid: str, step: int) -> dict[str, Any]:
    """A new pod at step 0 (created) to 4 (Ready)."""
    return pod(
        name,
        uid,
        node="n1" if step >= 1 else None,
        sandbox=step >= 2,
        running=step >= 3,
        ready=step >= 4,
    )


def test_a_recovery_step_by_step() -> None:
    t = Timeline(old=OLD, victim="b", size=2)
    t.see(state(*OLD.values()), 0.1)
    assert t.group_phases() == {}
    t.see(state(OLD["a"], pod("g-0-1", "b", restarts=1)), 1.0)  # the kubelet restarted it
    t.see(state(pod("g-0", "a", deleting=True), pod("g-0-1", "b", restarts=1)), 1.2)
    t.see(state(pod("g-0-1", "b", restarts=1, deleting=True)), 1.5)  # the leader gone
    t.see(state(fresh("g-0", "c", 0), pod("g-0-1", "b", deleting=True)), 1.6)
    t.see(state(fresh("g-0", "c", 1)), 2.0)  # the old worker gone
    t.see(state(fresh("g-0", "c", 4), fresh("g-0-1", "d", 0)), 2.5)
    t.see(state(fresh("g-0", "c", 4), fresh("g-0-1", "d", 1)), 2.6)
    t.see(state(fresh("g-0", "c", 4), fresh("g-0-1", "d", 3)), 3.0)  # sandbox and started at once
    t.see(state(fresh("g-0", "c", 4), fresh("g-0-1", "d", 4)), 3.4)
    assert t.group_phases() == {
        "exit_seen_s": 1.0,
        "react_s": 1.2,
        "old_gone_s": 2.0,
        "created_s": 2.5,
        "scheduled_s": 2.6,
        "sandbox_s": 3.0,
        "started_s": 3.0,
        "ready_s": 3.4,
    }
    rows = t.pods()
    assert [(r["name"], r["old"]) for r in rows] == [
        ("g-0", True),
        ("g-0-1", True),
        ("g-0", False),
        ("g-0-1", False),
    ]
    assert rows[1] == {
        "name": "g-0-1",
        "old": True,
        "victim": True,
        "grace": 1,
        "deleting": 1.5,
        "gone": 2.0,
    }
    assert rows[3]["sandbox"] == 3.0 and rows[3]["ready"] == 3.4


def test_an_exit_is_seen_when_the_container_is_not_running() -> None:
    t = Timeline(old=OLD, victim="b", size=2)
    t.see(state(OLD["a"], pod("g-0-1", "b", running=False, ready=False)), 0.9)
    assert t.group_phases() == {"exit_seen_s": 0.9}


def test_an_old_pod_gone_unmarked_counts_as_marked_when_it_went() -> None:
    t = Timeline(old=OLD, victim="b", size=2)
    t.see(state(OLD["b"]), 0.7)
    assert t.group_phases() == {"react_s": 0.7}


def test_the_newest_pods_count_when_a_replacement_is_replaced() -> None:
    t = Timeline(old=OLD, victim="b", size=2)
    t.see(state(fresh("g-0", "c", 4), fresh("g-0-1", "d", 4)), 1.0)
    t.see(state(fresh("g-0", "c", 4), fresh("g-0-1", "e", 0)), 2.0)  # d replaced by e
    assert "ready_s" not in t.group_phases()
    t.see(state(fresh("g-0", "c", 4), fresh("g-0-1", "e", 4)), 3.0)
    phases = t.group_phases()
    assert phases["created_s"] == 2.0 and phases["ready_s"] == 3.0
