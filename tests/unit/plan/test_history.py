"""The history ConfigMap (plan/lws/history.py) and the evidence taken from pods
(plan/lws/evidence.py): round trips, bounds (property tests), the write, and what is read of a
failed pod."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lws_operator.api import constants as c
from lws_operator.plan.lws.evidence import FAILURES_MAX, LogRequest, collect, log_tail, pod_failures
from lws_operator.plan.lws.history import (
    ContainerFailure,
    GroupHistory,
    History,
    Limits,
    Recreation,
    bound,
    history_name,
    log_key,
    parse_history,
    plan_write,
    project_history,
    size_of,
    tail,
)

LWS, UID = "big", "lws-uid"


def recreation(n: int, *, logs: int = 0, group: int = 0, message: str = "m") -> Recreation:
    return Recreation(
        number=n,
        at=f"2026-12-01T12:{n // 60:02d}:{n % 60:02d}.000Z",
        trigger="restarted",
        culprit=f"big-{group}-1",
        leader=f"big-{group}",
        leader_uid=f"u{n}",
        counted=True,
        failures=tuple(
            ContainerFailure(
                pod=f"big-{group}-1",
                container=f"c{k}",
                exit_code=1,
                message=message,
                log=log_key(group, n, k) if k < logs else None,
            )
            for k in range(max(1, logs))
        ),
    )


def cm(data: dict[str, str], owner: str = UID) -> dict[str, Any]:
    return {
        "metadata": {
            "name": history_name(LWS),
            "namespace": "ns",
            "uid": "cm",
            "resourceVersion": "7",
            "labels": {c.SET_NAME_LABEL: LWS},
            "ownerReferences": [{"controller": True, "uid": owner, "kind": c.KIND}],
        },
        "data": data,
    }


def test_a_group_history_round_trips_through_the_configmap() -> None:
    g = GroupHistory(
        restarts=2,
        streak=1,
        total=4,
        ready_since="2026-12-01T12:00:00.000Z",
        failed_leader="u",
        failed_at="t",
        backoff_leader="b",
        backoff_until="x",
        recreations=(recreation(3, logs=1), recreation(4)),
    )
    body = cm({"group-3": g.encoded(), "log-3-3-0": "tail", "requests": "3@1", "other": "x"})
    projected = project_history(body)
    assert projected is not None and "log-3-3-0" not in projected["data"]
    h = parse_history(projected, lws_name=LWS, lws_uid=UID)
    assert h.groups == {3: g} and h.handled_request == "3@1" and h.owned
    assert h.log_sizes == {"log-3-3-0": 4} and h.resource_version == "7"
    assert not parse_history(projected, lws_name=LWS, lws_uid="other").owned


def test_other_configmaps_and_bad_entries_never_break_reading() -> None:
    other = cm({})
    other["metadata"]["name"] = "something-else"
    assert project_history(other) is None
    h = parse_history(
        project_history(cm({"group-1": "{not json", "group-2": "[1]"})), lws_name=LWS, lws_uid=UID
    )
    assert h.groups == {} and len(h.errors) == 2


def test_tail_keeps_the_last_lines_within_the_bytes() -> None:
    text = "".join(f"line {i}\n" for i in range(100))
    assert tail(text, lines=3, max_bytes=1000) == "line 97\nline 98\nline 99"
    assert tail(text, lines=100, max_bytes=10) == "98\nline 99"
    assert tail("é" * 10, lines=1, max_bytes=5) == "éé", "never half a character"
    assert tail(text, lines=0, max_bytes=100) == ""


@given(st.text(), st.integers(0, 50), st.integers(0, 300))
def test_tail_is_bounded(text: str, lines: int, max_bytes: int) -> None:
    out = tail(text, lines=lines, max_bytes=max_bytes)
    assert len(out.encode()) <= max_bytes and out.count("\n") < max(lines, 1)


@settings(max_examples=60, deadline=None)
@given(
    per_group=st.lists(st.integers(0, 12), min_size=1, max_size=30),
    log_bytes=st.integers(0, 4096),
    max_bytes=st.integers(16384, 200_000),
    keep=st.integers(1, 6),
)
def test_bounds_hold_and_counts_are_never_dropped(
    per_group: list[int], log_bytes: int, max_bytes: int, keep: int
) -> None:
    groups = {
        i: GroupHistory(
            restarts=n,
            total=n,
            recreations=tuple(recreation(k, logs=2, group=i) for k in range(1, n + 1)),
        )
        for i, n in enumerate(per_group)
    }
    sizes = {
        f.log: log_bytes
        for g in groups.values()
        for r in g.recreations
        for f in r.failures
        if f.log
    }
    limits = Limits(recreations_per_group=keep, max_bytes=max_bytes)
    out, kept = bound(groups, sizes, limits)
    for i, g in out.items():
        assert g.restarts == groups[i].restarts and g.total == groups[i].total
        assert len(g.recreations) <= keep
        if groups[i].recreations:
            assert g.recreations[-1].number == groups[i].recreations[-1].number, "latest kept"
    named = {f.log for g in out.values() for r in g.recreations for f in r.failures if f.log}
    assert set(kept) == named
    assert size_of(out, kept) <= max_bytes or (
        not kept and all(len(g.recreations) <= 1 for g in out.values())
    ), "over the limit only with nothing left to drop"


def test_the_oldest_log_tails_go_first() -> None:
    groups = {0: GroupHistory(total=2, recreations=(recreation(1, logs=1), recreation(2, logs=1)))}
    sizes = {log_key(0, 1, 0): 10_000, log_key(0, 2, 0): 10_000}
    out, kept = bound(groups, sizes, Limits(max_bytes=16_384))
    assert kept == {log_key(0, 2, 0): 10_000}
    first = out[0].recreations[0].failures[0]
    assert first.log is None and first.log_error is not None and "16384 bytes" in first.log_error


def test_the_first_write_creates_an_owned_configmap_then_patches_it() -> None:
    old = History(history_name(LWS))
    groups = {1: GroupHistory(restarts=1, total=1, recreations=(recreation(1, logs=1, group=1),))}
    write, new = plan_write(
        old,
        groups,
        logs={log_key(1, 1, 0): "out"},
        handled_request=None,
        lws_name=LWS,
        namespace="ns",
        lws_uid=UID,
        limits=Limits(),
    )
    assert write is not None and write.create is not None and write.patch is None
    body = write.create
    assert body["metadata"]["ownerReferences"][0]["uid"] == UID
    assert body["metadata"]["labels"] == {c.SET_NAME_LABEL: LWS}
    assert json.loads(body["metadata"]["annotations"][c.GROUP_RESTART_COUNT_ANNOTATION]) == {"1": 1}
    assert body["data"][log_key(1, 1, 0)] == "out" and "group-1" in body["data"]
    stored = parse_history(project_history(cm(body["data"])), lws_name=LWS, lws_uid=UID)
    assert stored.groups == new.groups
    # Nothing changed: no write. A change: a merge patch with the resourceVersion.
    assert (
        plan_write(
            stored,
            stored.groups,
            logs={},
            handled_request=None,
            lws_name=LWS,
            namespace="ns",
            lws_uid=UID,
            limits=Limits(),
        )[0]
        is None
    )
    more = {
        1: GroupHistory(
            restarts=2, total=2, recreations=(*groups[1].recreations, recreation(2, group=1))
        )
    }
    patch = plan_write(
        stored,
        more,
        logs={},
        handled_request="1@x",
        lws_name=LWS,
        namespace="ns",
        lws_uid=UID,
        limits=Limits(recreations_per_group=1),
    )[0]
    assert patch is not None and patch.patch is not None
    assert patch.patch["metadata"]["resourceVersion"] == "7"
    assert patch.patch["data"][log_key(1, 1, 0)] is None, "the dropped record's log goes too"
    assert patch.patch["data"]["requests"] == "1@x"


def test_nothing_to_record_creates_nothing() -> None:
    write, _ = plan_write(
        History(history_name(LWS)),
        {},
        logs={},
        handled_request=None,
        lws_name=LWS,
        namespace="ns",
        lws_uid=UID,
        limits=Limits(),
    )
    assert write is None


def test_a_configmap_of_someone_else_is_never_written() -> None:
    theirs = parse_history(project_history(cm({}, owner="someone")), lws_name=LWS, lws_uid=UID)
    write, _ = plan_write(
        theirs,
        {0: GroupHistory(restarts=1)},
        logs={},
        handled_request=None,
        lws_name=LWS,
        namespace="ns",
        lws_uid=UID,
        limits=Limits(),
    )
    assert write is None


# ---- evidence -----------------------------------------------------------------------------


def failed_pod() -> dict[str, Any]:
    return {
        "metadata": {"name": "big-0-1", "uid": "p"},
        "spec": {"nodeName": "gpu-1"},
        "status": {
            "phase": "Running",
            "initContainerStatuses": [
                {
                    "name": "preflight",
                    "restartCount": 2,
                    "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                    "lastState": {
                        "terminated": {
                            "exitCode": 1,
                            "reason": "Error",
                            "message": "nccl: peer big-0 unreachable",
                        }
                    },
                },
            ],
            "containerStatuses": [
                {
                    "name": "main",
                    "restartCount": 0,
                    "state": {"waiting": {"reason": "PodInitializing"}},
                },
                {
                    "name": "side",
                    "restartCount": 1,
                    "state": {"running": {}},
                    "lastState": {
                        "terminated": {"exitCode": 137, "reason": "OOMKilled", "signal": 9}
                    },
                },
                {
                    "name": "done",
                    "restartCount": 0,
                    "state": {"terminated": {"exitCode": 0, "reason": "Completed"}},
                },
            ],
        },
    }


def test_the_failed_containers_of_a_pod_with_what_they_left() -> None:
    found = pod_failures(failed_pod())
    assert [
        (f.container, f.init, f.exit_code, f.reason, f.signal, f.restart_count, prev)
        for f, prev in found
    ] == [
        ("preflight", True, 1, "Error", None, 2, True),
        ("side", False, 137, "OOMKilled", 9, 1, True),
    ]
    assert found[0][0].message == "nccl: peer big-0 unreachable" and found[0][0].node == "gpu-1"
    assert found[0][0].summary() == (
        "pod big-0-1 init container preflight exited 1 (Error) after 2 restarts on node gpu-1: "
        "nccl: peer big-0 unreachable"
    )


def test_evidence_puts_the_culprit_first_and_bounds_logs_and_records() -> None:
    pods = [dict(failed_pod(), metadata={"name": f"big-0-{i}"}) for i in range(1, 10)]
    failures, logs = collect(pods, "big-0-5", Limits(log_tails_per_recreation=3))
    assert failures[0].pod == "big-0-5" and len(failures) == FAILURES_MAX
    assert [(r.index, r.pod, r.container) for r in logs] == [
        (0, "big-0-5", "preflight"),
        (1, "big-0-5", "side"),
        (2, "big-0-1", "preflight"),
    ]
    assert logs[0].query(Limits(log_tail_lines=20, log_tail_bytes=100)) == {
        "container": "preflight",
        "previous": True,
        "tailLines": 20,
        "limitBytes": 65536,
    }
    skipped, reads = collect(pods[:1], "big-0-1", Limits(), {"big-0-1": "node gpu-1 is NotReady"})
    assert not reads and skipped[0].log_error == "log unavailable: node gpu-1 is NotReady"
    none, _ = collect([], "gone-pod", Limits())
    assert none == (ContainerFailure(pod="gone-pod", reason="deleted"),)


def test_a_log_tail_is_cut_to_the_limits() -> None:
    raw = b"".join(b"x" * 50 + b"\n" for _ in range(1000))
    text = log_tail(raw, Limits(log_tail_lines=10, log_tail_bytes=200))
    assert len(text.encode()) <= 200 and text.count("\n") <= 9


def test_log_request_reads_the_current_run_of_a_container_not_restarted_yet() -> None:
    pod = failed_pod()
    pod["status"]["containerStatuses"] = [
        {
            "name": "main",
            "restartCount": 1,
            "state": {"terminated": {"exitCode": 2}},
            "lastState": {"terminated": {"exitCode": 1}},
        }
    ]
    pod["status"]["initContainerStatuses"] = []
    ((failure, previous),) = pod_failures(pod)
    assert failure.exit_code == 2 and previous is False
    assert LogRequest(0, "p", "main", previous).query(Limits())["previous"] is False
