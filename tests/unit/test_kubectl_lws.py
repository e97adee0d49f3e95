"""``kubectl lws status`` rows, from objects as the API server returns them."""

from __future__ import annotations

import datetime
from typing import Any

from lws_operator.api import constants as c
from lws_operator.kubectl_lws import (
    age,
    context_namespace,
    last_recreations,
    moves_section,
    status_rows,
)
from lws_operator.plan import disruption
from tests.unit.api.lws_testdata import base_object

NOW = datetime.datetime(2026, 1, 1, 12, 0, 0, tzinfo=datetime.UTC)


def pod(name: str, group: int, worker: int, *, ready: bool = True, restarts: int = 0) -> Any:
    return {
        "metadata": {
            "name": name,
            "creationTimestamp": "2026-01-01T11:55:00Z",
            "labels": {
                c.SET_NAME_LABEL: "x",
                c.GROUP_INDEX_LABEL: str(group),
                c.WORKER_INDEX_LABEL: str(worker),
                c.REVISION_KEY: "abc",
            },
        },
        "spec": {"nodeName": f"node-{group}"},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "containerStatuses": [{"name": "c", "restartCount": restarts}],
        },
    }


def recreate_event(group: int, culprit: str, when: str) -> dict[str, Any]:
    return {
        "reason": "RecreateGroup",
        "eventTime": when,
        "note": f"Worker pod {culprit} failed, deleted leader pod x-{group} to recreate group "
        f"{group}",
    }


LWS = {
    "metadata": {
        "name": "x",
        "namespace": "ns",
        "annotations": {c.EXCLUSIVE_KEY_ANNOTATION: "rack"},
    },
    "spec": {"replicas": 3, "leaderWorkerTemplate": {"size": 3}},
}


def test_one_row_per_group_with_readiness_restarts_domain_and_last_recreation() -> None:
    pods = [
        pod("x-0", 0, 0),
        pod("x-0-1", 0, 1),
        pod("x-0-2", 0, 2, restarts=2),
        pod("x-1", 1, 0),
        pod("x-1-1", 1, 1, ready=False),
    ]
    events = [
        recreate_event(1, "x-1-2", "2026-01-01T11:50:00.000000Z"),
        recreate_event(1, "x-1-1", "2026-01-01T11:58:00.000000Z"),
        {"reason": "GroupsProgressing", "note": "Created leader statefulset x"},
    ]
    nodes = {"node-0": {"metadata": {"labels": {"rack": "r0"}}}, "node-1": None}
    header, *rows = status_rows(LWS, pods, events, nodes, NOW)
    assert header[0] == "GROUP" and header[-1] == "LAST RECREATION"
    assert rows[0] == ["0", "abc", "1/1", "2/2", "2", "5m", "node-0", "r0", "-"]
    assert rows[1] == [
        "1",
        "abc",
        "1/1",
        "0/2",
        "0",
        "5m",
        "node-1",
        "?",
        "Worker pod x-1-1 failed (2m ago)",
    ]
    assert rows[2] == ["2", "-", "0/1 (missing)", "0/2", "0", "-", "-", "-", "-"]


def test_last_recreation_is_the_newest_per_group() -> None:
    events = [
        recreate_event(0, "x-0-1", "2026-01-01T11:59:00.000000Z"),
        recreate_event(0, "x-0-2", "2026-01-01T11:00:00.000000Z"),
        {"reason": "RecreateGroup", "note": "unparsable"},
    ]
    latest = last_recreations(events)
    assert list(latest) == [0] and latest[0][0] == "Worker pod x-0-1 failed"


def test_ages_like_kubectl() -> None:
    def at(**ago: float) -> datetime.datetime:
        return NOW - datetime.timedelta(**ago)

    assert age(at(seconds=42), NOW) == "42s"
    assert age(at(minutes=5), NOW) == "5m"
    assert age(at(minutes=90), NOW) == "90m"
    assert age(at(hours=3), NOW) == "3h"
    assert age(at(days=3), NOW) == "3d"
    assert age(None, NOW) == "-"


def test_namespace_of_the_current_context(tmp_path: Any) -> None:
    cfg = tmp_path / "config"
    cfg.write_text(
        "current-context: b\ncontexts:\n- name: a\n  context: {namespace: na}\n"
        "- name: b\n  context: {namespace: nb}\n"
    )
    assert context_namespace(cfg) == "nb"
    assert context_namespace(tmp_path / "missing") == "default"


def test_the_groups_being_moved_and_why() -> None:
    lws = base_object("vllm")
    now = datetime.datetime(2026, 12, 1, 12, 0, 30, tzinfo=datetime.UTC)
    move = disruption.Move(
        2,
        "vllm-2-1",
        "gpu-node-3",
        "2026-12-01T12:00:00Z",
        disruption.SURGING,
        slot=True,
        why="waiting for surge group vllm-4 to be Ready",
    )
    state = disruption.DisruptionState((move,))
    sts = {"metadata": {"annotations": {disruption.STATE_ANNOTATION: state.to_annotation()}}}
    assert moves_section(lws, sts, now) == (
        "groups being moved (disruption budget 1 from maxUnavailable):\n"
        "  group 2: surging for 30s, asked by the eviction of pod vllm-2-1 (node gpu-node-3): "
        "waiting for surge group vllm-4 to be Ready\n"
    )
    assert moves_section(lws, None, now) == ""
