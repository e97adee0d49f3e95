"""What `make run` shows (testbed/lws_testbed/devview.py): the view of an LWS and its pods, the
change lines of the non-terminal mode and the table redrawn in place on a terminal."""

from __future__ import annotations

import io
import itertools
import os
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from lws_operator.api import constants as c
from lws_testbed.devview import (
    LineDisplay,
    Live,
    TerminalDisplay,
    change_line,
    frame,
    headline,
    pod_state,
    redraw,
    view_of,
)
from tests.devrun_output import Replay, Screen

NAME = "vllm-llama3-405b"
HINT = "Ctrl-C stops"


def lws(replicas: int = 2, status: dict[str, Any] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"metadata": {"name": NAME}, "spec": {"replicas": replicas}}
    if status is not None:
        obj["status"] = status
    return obj


def pod(group: int, worker: int, state: str = "Pending", node: str = "") -> dict[str, Any]:
    name = f"{NAME}-{group}" + (f"-{worker}" if worker else "")
    status: dict[str, Any] = {"phase": "Running" if state in ("Running", "Ready") else state}
    if state == "Ready":
        status["conditions"] = [{"type": "Ready", "status": "True"}]
    if state == "Scheduled":
        status["phase"] = "Pending"
    meta: dict[str, Any] = {
        "name": name,
        "labels": {c.GROUP_INDEX_LABEL: str(group), c.WORKER_INDEX_LABEL: str(worker)},
    }
    if state == "Terminating":
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
        status["phase"] = "Running"
    return {"metadata": meta, "spec": {"nodeName": node} if node else {}, "status": status}


def test_before_the_operator_writes_a_status_the_headline_says_so_never_none() -> None:
    assert headline(view_of(NAME, lws(), [])) == (
        f"{NAME}: 0/2 groups ready, waiting for the operator"
    )
    # Zero counters are omitted from a status (as upstream does): still 0, not None.
    reconciled = view_of(NAME, lws(status={"conditions": []}), [])
    assert headline(reconciled) == f"{NAME}: 0/2 groups ready"
    assert headline(view_of(NAME, lws(status={"readyReplicas": 1}), [])) == (
        f"{NAME}: 1/2 groups ready"
    )
    no_replicas = {"metadata": {"name": NAME}, "spec": {}}
    assert "0/1 groups" in headline(view_of(NAME, no_replicas, []))
    assert headline(view_of(NAME, None, [])) == f"{NAME}: not found"


def test_pod_states() -> None:
    assert pod_state(pod(0, 0)) == "Pending"
    assert pod_state(pod(0, 0, "Scheduled", "n")) == "Scheduled"
    assert pod_state(pod(0, 0, "Running", "n")) == "Running"
    assert pod_state(pod(0, 0, "Ready", "n")) == "Ready"
    assert pod_state(pod(0, 0, "Terminating", "n")) == "Terminating"
    assert pod_state(pod(0, 0, "Failed", "n")) == "Failed"
    assert pod_state({"metadata": {"name": "bare"}}) == "Pending"


def test_pods_are_ordered_by_group_then_worker_index() -> None:
    pods = [pod(10, 0), pod(1, 1), pod(2, 0), pod(1, 0)]
    names = [r.name for r in view_of(NAME, lws(), pods).pods]
    assert names == [f"{NAME}-1", f"{NAME}-1-1", f"{NAME}-2", f"{NAME}-10"]


def test_one_line_per_change_and_none_when_nothing_shown_changed() -> None:
    before = view_of(NAME, lws(status={}), [pod(0, 1, "Scheduled", "gpu-node-3")])
    first = change_line(None, before)
    # Pods exist, so the operator has acted: no "waiting for the operator" any more.
    assert first == f"{NAME}: 0/2 groups ready; pod {NAME}-0-1 Scheduled on gpu-node-3"
    # A new resourceVersion, managedFields, a condition's timestamp: nothing shown changed.
    same = pod(0, 1, "Scheduled", "gpu-node-3")
    same["metadata"]["resourceVersion"] = "99"
    assert change_line(before, view_of(NAME, lws(status={}), [same])) is None
    after = view_of(NAME, lws(status={"readyReplicas": 1}), [pod(0, 1, "Ready", "gpu-node-3")])
    assert change_line(before, after) == (
        f"{NAME}: 1/2 groups ready; pod {NAME}-0-1 Ready on gpu-node-3"
    )
    gone = view_of(NAME, lws(status={"readyReplicas": 1}), [])
    assert change_line(after, gone) == f"{NAME}: 1/2 groups ready; pod {NAME}-0-1 deleted"
    assert change_line(gone, view_of(NAME, lws(status={"readyReplicas": 2}), [])) == (
        f"{NAME}: 2/2 groups ready"
    )


STATES = st.sampled_from(["Pending", "Scheduled", "Running", "Ready", "Terminating", "Gone"])


@st.composite
def histories(draw: st.DrawFn) -> list[tuple[int, list[dict[str, Any]]]]:
    """A sequence of (ready groups, pods) observations of a 2 x 2 LWS."""
    out = []
    for _ in range(draw(st.integers(1, 12))):
        pods = []
        for group in range(2):
            for worker in range(2):
                state = draw(STATES)
                if state != "Gone":
                    node = "" if state == "Pending" else f"gpu-node-{group * 2 + worker}"
                    pods.append(pod(group, worker, state, node))
        out.append((draw(st.integers(0, 2)), pods))
    return out


@given(histories())
def test_the_lines_replay_to_the_last_state_and_are_never_repeated(
    history: list[tuple[int, list[dict[str, Any]]]],
) -> None:
    out = io.StringIO()
    display = LineDisplay(out)
    shown = None
    for ready, pods in history:
        view = view_of(NAME, lws(status={"readyReplicas": ready}), pods)
        display.show(shown, view)
        shown = view
    lines = out.getvalue().splitlines()
    assert all(a != b for a, b in itertools.pairwise(lines))
    assert all("None" not in line for line in lines)
    replay = Replay(NAME)
    assert all(replay.feed(line) for line in lines)
    assert shown is not None
    assert replay.headline == headline(shown)
    assert replay.pods == {r.name: (r.state, r.node) for r in shown.pods}


def test_the_frame_is_a_table_with_a_status_line() -> None:
    view = view_of(
        NAME,
        lws(status={"readyReplicas": 1}),
        [
            pod(0, 0, "Ready", "gpu-node-0"),
            pod(0, 1, "Ready", "gpu-node-12"),
            pod(1, 0, "Scheduled", "gpu-node-2"),
            pod(1, 1),
        ],
    )
    assert frame(view, HINT, rows=24) == [
        f"{NAME}: 1/2 groups ready",
        "  POD                   GROUP  WORKER  NODE         STATE",
        "  vllm-llama3-405b-0    0      0       gpu-node-0   Ready",
        "  vllm-llama3-405b-0-1  0      1       gpu-node-12  Ready",
        "  vllm-llama3-405b-1    1      0       gpu-node-2   Scheduled",
        "  vllm-llama3-405b-1-1  1      1       -            Pending",
        f"2/4 pods Ready; {HINT}",
    ]
    assert frame(view_of(NAME, lws(), []), HINT, rows=24) == [
        f"{NAME}: 0/2 groups ready, waiting for the operator",
        "  (no pods yet)",
        HINT,
    ]


def test_a_frame_taller_than_the_terminal_is_cut_to_fit() -> None:
    pods = [pod(g, w, "Ready", f"n{g}") for g in range(10) for w in range(4)]
    lines = frame(view_of(NAME, lws(10, {"readyReplicas": 10}), pods), HINT, rows=12)
    assert len(lines) == 11  # rows - 1: the cursor line stays below it
    assert lines[-2] == "  ... and 33 more pods"  # 40 pods, 7 shown
    assert lines[-1] == f"40/40 pods Ready; {HINT}"


def test_redraw_in_place_as_the_table_grows_and_shrinks_with_notes_above() -> None:
    screen = Screen(columns=40, rows=10)
    screen.feed(redraw(0, ["starting"], ["a", "b"], 40))
    screen.feed(redraw(2, [], ["a", "b", "c", "d"], 40))  # grows
    note = "a log line longer than the forty columns of this terminal"
    screen.feed(redraw(4, [note], ["a", "b", "c", "d"], 40))  # wraps over two lines
    screen.feed(redraw(4, [], ["x"], 40))  # shrinks
    assert screen.visible() == ["starting", note[:40], note[40:], "x"]
    screen.feed(redraw(1, [], ["y" * 60], 40))  # cut to the width: never wraps
    assert screen.visible()[-1] == "y" * 39
    screen.feed(redraw(1, [], ["z"], 40))
    assert screen.visible() == ["starting", note[:40], note[40:], "z"]


def test_the_terminal_keeps_one_table_however_many_changes_and_logs() -> None:
    """The frame is redrawn in place: after many changes and log lines, the screen and its
    scrollback hold the notes once each and one table, the last."""
    out = io.StringIO()
    display = TerminalDisplay(out, HINT, lambda: os.terminal_size((100, 20)))
    shown = None
    states = ["Pending", "Scheduled", "Ready"]
    for step in range(3 * 4):
        pods = [pod(i // 2, i % 2, states[min(2, step // 4)], f"gpu-node-{i}") for i in range(4)]
        view = view_of(NAME, lws(status={"readyReplicas": step // 5}), pods)
        display.show(shown, view)
        shown = view
        if step % 3 == 0:
            display.note(f"12:00:0{step // 3} reconcile: note {step}")
    screen = Screen(columns=100, rows=20)
    screen.feed(out.getvalue())
    whole = screen.scrollback() + screen.visible()
    notes = [f"12:00:0{s // 3} reconcile: note {s}" for s in range(0, 12, 3)]
    assert whole[: len(notes)] == notes
    assert shown is not None
    assert whole[len(notes) :] == frame(shown, HINT, rows=20)
    assert whole[len(notes)] == f"{NAME}: 2/2 groups ready"
    # At the end the table stays, and what follows goes below it.
    display.close()
    display.note("stopped")
    after = Screen(columns=100, rows=20)
    after.feed(out.getvalue())
    assert after.scrollback() + after.visible() == [*notes, *frame(shown, HINT, rows=20), "stopped"]


def test_live_notes_without_a_table_are_plain_lines() -> None:
    out = io.StringIO()
    live = Live(out, lambda: 80)
    live.note("one")
    live.note("two\nthree")
    screen = Screen()
    screen.feed(out.getvalue())
    assert screen.visible() == ["one", "two", "three"]


# ---- with Kueue (make run KUEUE=1) ------------------------------------------------------------
def workload(group: int, admitted: bool, message: str = "") -> dict[str, Any]:
    conditions = (
        [{"type": "Admitted", "status": "True", "reason": "Admitted"}]
        if admitted
        else [{"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": message}]
    )
    return {
        "metadata": {
            "name": f"leaderworkerset-{NAME}-{group}-abcde",
            "annotations": {"kueue.x-k8s.io/component-workload-index": str(group)},
            "ownerReferences": [{"uid": "u"}],
        },
        "spec": {},
        "status": {"conditions": conditions},
    }


def test_with_kueue_a_waiting_group_says_why_and_its_pods_are_gated() -> None:
    owned = {**lws(status={"readyReplicas": 1}), "metadata": {"name": NAME, "uid": "u"}}
    gated = pod(1, 0)
    gated["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/admission"}]
    assert pod_state(gated) == "Gated"
    why = (
        "couldn't assign flavors to pod set leader: insufficient unused quota for "
        "nvidia.com/gpu in flavor gpu, 8 more needed; couldn't assign flavors to pod set worker"
    )
    waiting = view_of(NAME, owned, [pod(0, 0, "Ready", "n0"), gated], [workload(0, True)])
    both = view_of(
        NAME, owned, [pod(0, 0, "Ready", "n0"), gated], [workload(0, True), workload(1, False, why)]
    )
    line = change_line(waiting, both)
    assert line is not None
    replay = Replay(NAME)
    assert replay.feed(line)  # "; " inside Kueue's reason does not split the line
    assert replay.groups["1"].startswith("waits for quota: couldn't assign flavors")
    assert "8 more needed, couldn't assign" in replay.groups["1"]
    table = frame(both, HINT, rows=20)
    assert any(row.strip().startswith("group 1 waits for quota:") for row in table), table
    assert not any("group 0" in row for row in table), table  # admitted: nothing to say
    # Without Kueue's Workloads: no group lines at all.
    assert view_of(NAME, owned, [gated]).queue == ()
