"""``kubectl lws status`` rows, from objects as the API server returns them."""

from __future__ import annotations

import datetime
from typing import Any

from lws_operator.api import constants as c
from lws_operator.kubectl.cli import context_namespace
from lws_operator.kubectl.common import age, last_recreations, status_rows
from lws_operator.kubectl.lws import moves_section
from lws_operator.plan.lws import disruption
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


# ---- failure handling (issue 16) ------------------------------------------------------------


def test_failure_lines_show_backoff_failed_nodes_and_recent_recreations() -> None:
    from lws_operator.kubectl.lws import failure_lines
    from lws_operator.plan.lws.history import (
        ContainerFailure,
        GroupHistory,
        History,
        Recreation,
    )
    from lws_operator.plan.timestamps import format_millis

    def rec(n: int, ago: int, waited: float = 0) -> Recreation:
        return Recreation(
            number=n,
            at=format_millis(NOW - datetime.timedelta(seconds=ago)),
            trigger="restarted",
            culprit="x-1-1",
            leader="x-1",
            leader_uid=f"old{n}",
            counted=True,
            waited=waited,
            failures=(ContainerFailure(pod="x-1-1", container="c", exit_code=1, log="log-1-1-0"),),
        )

    leaders = [pod("x-0", 0, 0), pod("x-1", 1, 0), pod("x-2", 2, 0)]
    for p_ in leaders:
        p_["metadata"]["uid"] = f"uid-{p_['metadata']['name']}"
    history = History(
        "x-restart-history",
        exists=True,
        groups={
            1: GroupHistory(
                restarts=2,
                total=2,
                backoff_leader="uid-x-1",
                backoff_until=format_millis(NOW + datetime.timedelta(seconds=40)),
                recreations=(rec(1, 60), rec(2, 30, waited=10)),
            ),
            2: GroupHistory(restarts=3, failed_leader="uid-x-2"),
        },
    )
    lws = {
        **LWS,
        "spec": {**LWS["spec"], "leaderWorkerTemplate": {"size": 3, "maxGroupRestarts": 3}},
    }
    nodes = {
        "node-0": {
            "metadata": {"name": "node-0"},
            "status": {"conditions": [{"type": "Ready", "status": "False"}]},
        }
    }
    lines = failure_lines(lws, leaders, history, nodes, NOW)
    assert lines == [
        "group 0: pod x-0 on node node-0: NotReady",
        "group 1: crash loop, next recreation in 40 s",
        "group 1: 2 recreations, 2 of maxGroupRestarts 3 counted by the budget; last 2:",
        "  #2 30s ago (restarted, after a 10 s backoff): pod x-1-1 container c exited 1 [log kept]",
        "  #1 1m ago (restarted): pod x-1-1 container c exited 1 [log kept]",
        "group 2: Failed: failed again with 3 of maxGroupRestarts 3 recreations spent; not "
        "recreated, its pods are kept for inspection (kubectl lws recreate to retry)",
    ]


def test_logs_print_each_kept_tail_or_why_there_is_none() -> None:
    import json as json_

    from lws_operator.kubectl.lws import log_sections, request_value
    from lws_operator.plan.lws.history import ContainerFailure, GroupHistory, Recreation

    g = GroupHistory(
        total=1,
        recreations=(
            Recreation(
                number=1,
                at="2026-01-01T11:00:00.000Z",
                trigger="failed",
                culprit="x-0",
                leader="x-0",
                leader_uid="u",
                counted=True,
                failures=(
                    ContainerFailure(pod="x-0", container="a", exit_code=1, log="log-0-1-0"),
                    ContainerFailure(
                        pod="x-0", container="b", exit_code=2, log_error="log unavailable: 404"
                    ),
                ),
            ),
        ),
    )
    cm = {
        "metadata": {
            "name": "x-restart-history",
            "labels": {c.SET_NAME_LABEL: "x"},
            "ownerReferences": [{"controller": True, "uid": "lws"}],
        },
        "data": {"group-0": g.encoded(), "log-0-1-0": "panic: boom\n"},
    }
    out = log_sections(cm, 0, "x", "lws")
    assert out == (
        "=== group 0 recreation #1 at 2026-01-01T11:00:00.000Z (failed)\n"
        "--- pod x-0 container a exited 1\npanic: boom\n"
        "--- pod x-0 container b exited 2\n(log unavailable: 404)\n"
    )
    assert log_sections(cm, 3, "x", "lws") == "group 3: no recreation recorded\n"
    assert request_value([3, 1, 3], "17") == "1,3@17"
    assert json_.loads(g.encoded())["total"] == 1


def test_the_new_commands_parse() -> None:
    from lws_operator.kubectl.cli import build_parser

    args = build_parser().parse_args(["logs", "x", "3", "-n", "ns"])
    assert (args.command, args.name, args.group, args.namespace) == ("logs", "x", 3, "ns")
    args = build_parser().parse_args(["recreate", "x", "1", "4"])
    assert (args.command, args.groups) == ("recreate", [1, 4])
