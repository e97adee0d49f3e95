"""Restart budget, backoff, requests and the history records (plan/lws/failures.py,
plan/lws/backoff.py), as pure functions: the cluster tests show the same on the local cluster."""

from __future__ import annotations

import datetime
from dataclasses import replace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from lws_operator.api import constants as c
from lws_operator.plan.lws import backoff as bo
from lws_operator.plan.lws.failures import (
    Evidence,
    FailureDecisions,
    decide_failures,
    parse_request,
    record,
    requested,
)
from lws_operator.plan.lws.groups import Group
from lws_operator.plan.lws.history import (
    ContainerFailure,
    GroupHistory,
    History,
    Recreation,
)
from lws_operator.plan.lws.restart import Recreate
from lws_operator.plan.timestamps import format_millis
from tests.unit.plan.groups import leader_pod

NOW = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.UTC)
BACKOFF = bo.Backoff(initial=10, maximum=300, reset_after=600)


def at(seconds_ago: float) -> str:
    return format_millis(NOW - datetime.timedelta(seconds=seconds_ago))


def leader(index: int, uid: str | None = None, *, ready: bool = True) -> dict[str, Any]:
    pod = leader_pod(index, ready=ready)
    if uid is not None:
        pod["metadata"]["uid"] = uid
    return pod


def broken(index: int, uid: str | None = None) -> tuple[Group, Recreate]:
    pod = leader(index, uid)
    group = Group(index, pod)
    return group, Recreate(
        index=index,
        leader=pod,
        workers=None,
        members=(pod,),
        culprit=pod["metadata"]["name"],
        why="restarted",
        lost=frozenset({f"lost-{index}"}),
    )


def entry(number: int, leader_uid: str, seconds_ago: float, counted: bool = True) -> Recreation:
    return Recreation(
        number=number,
        at=at(seconds_ago),
        trigger="restarted",
        culprit="x",
        leader="test-sample-0",
        leader_uid=leader_uid,
        counted=counted,
    )


def history(**groups: GroupHistory) -> History:
    return History(
        "test-sample-restart-history",
        exists=True,
        resource_version="1",
        groups={int(k[1:]): g for k, g in groups.items()},
    )


def decide(
    group: Group,
    plan: Recreate | None,
    h: History,
    *,
    max_restarts: int | None = None,
    now: datetime.datetime = NOW,
) -> FailureDecisions:
    return decide_failures(
        planned=[plan] if plan else [],
        requests=[],
        groups=[group],
        history=h,
        max_restarts=max_restarts,
        size=1,
        backoff=BACKOFF,
        now=now,
    )


# ---- backoff ------------------------------------------------------------------------------


def test_the_backoff_doubles_from_the_second_recreation_up_to_the_cap() -> None:
    assert [bo.delay(n, BACKOFF) for n in range(7)] == [0, 10, 20, 40, 80, 160, 300]
    assert bo.delay(5, bo.Backoff(initial=0)) == 0, "initial 0 turns it off"


@given(
    streak=st.integers(0, 200),
    initial=st.floats(0, 100),
    maximum=st.floats(0, 1000),
    since=st.floats(0, 2000),
)
def test_the_wait_is_never_negative_nor_above_the_cap(
    streak: int, initial: float, maximum: float, since: float
) -> None:
    b = bo.Backoff(initial, maximum, 600)
    last = NOW - datetime.timedelta(seconds=since)
    wait = bo.wait(streak=streak, last=last, ready_since=None, now=NOW, backoff=b)
    assert 0 <= wait <= max(maximum, 0) + 1e-6
    assert (
        wait == max(0.0, bo.delay(streak, b) - since)
        or abs(wait - max(0.0, bo.delay(streak, b) - since)) < 1e-6
    )


def test_a_group_ready_long_enough_starts_a_new_streak() -> None:
    last = NOW - datetime.timedelta(seconds=5)
    long_ready = NOW - datetime.timedelta(seconds=600)
    short_ready = NOW - datetime.timedelta(seconds=599)
    assert bo.wait(streak=4, last=last, ready_since=long_ready, now=NOW, backoff=BACKOFF) == 0
    assert bo.wait(streak=4, last=last, ready_since=short_ready, now=NOW, backoff=BACKOFF) == 75


# ---- the gate -----------------------------------------------------------------------------


def test_the_first_recreation_is_immediate() -> None:
    group, plan = broken(0)
    decided = decide(group, plan, history())
    assert decided.recreate == ((plan, "restarted", 0.0),) and decided.retry is None


def test_a_repeat_within_the_backoff_waits_and_is_announced_once() -> None:
    group, plan = broken(0)
    h = history(
        g0=GroupHistory(restarts=2, streak=2, total=2, recreations=(entry(2, "old-leader", 5),))
    )
    decided = decide(group, plan, h)
    (wait,) = decided.waiting
    assert not decided.recreate and wait.seconds == 15 and wait.backoff == 20 and wait.announce
    assert decided.retry == 15
    assert wait.event.note == (
        "group 0: crash loop, next recreation in 15 s (backoff 20 s after the last one)"
    )
    recorded = record(h, decided, evidence={}, logs={}, backoff=BACKOFF, group_count=1, now=NOW)
    g = recorded.groups[0]
    assert g.backoff_leader == "leader-0" and g.backoff_until == format_millis(
        NOW + datetime.timedelta(seconds=15)
    )
    again = decide(group, plan, History(h.name, True, "2", groups=recorded.groups))
    assert not again.waiting[0].announce, "announced once per leader"
    later = decide(
        group,
        plan,
        History(h.name, True, "2", groups=recorded.groups),
        now=NOW + datetime.timedelta(seconds=15),
    )
    assert later.recreate == ((plan, "restarted", 20.0),), "due: recreated, with the wait"


@given(budget=st.integers(0, 5), restarts=st.integers(0, 8))
def test_the_budget_counts_recreations_and_keeps_the_pods_once_spent(
    budget: int, restarts: int
) -> None:
    group, plan = broken(0)
    h = history(
        g0=GroupHistory(
            restarts=restarts,
            total=restarts,
            recreations=(entry(restarts, "old", 3600),) if restarts else (),
        )
    )
    decided = decide(group, plan, h, max_restarts=budget)
    if restarts >= budget:
        (ex,) = decided.exhausted
        assert not decided.recreate and decided.kept == plan.lost
        assert ex.event.reason == c.REASON_MAX_GROUP_RESTARTS_EXCEEDED
        recorded = record(h, decided, evidence={}, logs={}, backoff=BACKOFF, group_count=1, now=NOW)
        failed = History(h.name, True, "2", groups=recorded.groups)
        assert failed.failed_groups == (0,)
        assert decide(group, plan, failed, max_restarts=budget).kept == plan.lost
        assert not decide(group, plan, failed, max_restarts=budget).exhausted, "reported once"
    else:
        assert [p for p, _, _ in decided.recreate] == [plan]


def test_unset_budget_is_unbounded() -> None:
    group, plan = broken(0)
    h = history(g0=GroupHistory(restarts=10_000, recreations=(entry(1, "old", 3600),)))
    assert decide(group, plan, h).recreate


def test_a_recorded_recreation_whose_leader_still_exists_is_finished_not_counted() -> None:
    group, plan = broken(0)
    h = history(g0=GroupHistory(restarts=1, total=1, recreations=(entry(1, "leader-0", 0),)))
    decided = decide(group, plan, h, max_restarts=1)
    assert decided.redo == (plan,) and not decided.recreate and not decided.exhausted
    # Even when nothing would recreate it now (a requested one, say): still finished.
    assert decide(group, None, h).redo[0].leader is group.leader


def test_a_failed_group_whose_leader_was_replaced_recovers_with_a_fresh_budget() -> None:
    group, plan = broken(0, uid="new-leader")
    h = history(
        g0=GroupHistory(
            restarts=3,
            failed_leader="old-leader",
            failed_at=at(60),
            recreations=(entry(3, "older", 120),),
        )
    )
    decided = decide(group, plan, h, max_restarts=3)
    assert decided.recovered == (0,) and [p for p, _, _ in decided.recreate] == [plan]
    recorded = record(h, decided, evidence={}, logs={}, backoff=BACKOFF, group_count=1, now=NOW)
    assert recorded.groups[0].restarts == 1 and recorded.groups[0].failed_leader is None


def test_a_request_recreates_at_once_and_starts_afresh() -> None:
    group = Group(0, leader(0))
    h = history(
        g0=GroupHistory(
            restarts=3, streak=3, failed_leader="leader-0", recreations=(entry(3, "older", 1),)
        )
    )
    request, error = parse_request({c.RECREATE_GROUPS_ANNOTATION: "0,7@123"}, None)
    assert error is None and request is not None and request.groups == (0, 7)
    asked = requested(request, [group])  # group 7 does not exist: left out
    decided = decide_failures(
        planned=[],
        requests=asked,
        groups=[group],
        history=h,
        max_restarts=3,
        size=1,
        backoff=BACKOFF,
        now=NOW,
    )
    ((plan, trigger, waited),) = decided.recreate
    assert trigger == "requested" and waited == 0 and plan.why == "requested"
    assert plan.event.note == (
        "Recreation requested, deleted leader pod test-sample-0 to recreate group 0"
    )
    recorded = record(h, decided, evidence={}, logs={}, backoff=BACKOFF, group_count=1, now=NOW)
    g = recorded.groups[0]
    assert (g.restarts, g.streak, g.failed_leader) == (0, 0, None)
    assert g.last is not None and not g.last.counted and g.last.trigger == "requested"
    assert parse_request({c.RECREATE_GROUPS_ANNOTATION: "0,7@123"}, "0,7@123") == (None, None)


def test_a_malformed_request_is_an_error_naming_the_annotation() -> None:
    request, error = parse_request({c.RECREATE_GROUPS_ANNOTATION: "three"}, None)
    assert request is None and error is not None
    assert error.startswith(f"metadata.annotations[{c.RECREATE_GROUPS_ANNOTATION}]: ")


def test_ready_after_a_recreation_is_noted_once() -> None:
    group = Group(0, leader(0, ready=True))
    h = history(g0=GroupHistory(restarts=1, streak=1, total=1, recreations=(entry(1, "old", 30),)))
    decided = decide(group, None, h)
    assert decided.ready == (0,)
    recorded = record(h, decided, evidence={}, logs={}, backoff=BACKOFF, group_count=1, now=NOW)
    assert recorded.groups[0].ready_since == format_millis(NOW)
    assert not decide(group, None, History(h.name, True, "2", groups=recorded.groups)).ready


def test_a_record_holds_the_evidence_and_its_log_tails() -> None:
    group, plan = broken(0)
    failure = ContainerFailure(pod="p", container="c", exit_code=1, reason="Error")
    decided = decide(group, plan, history())
    recorded = record(
        history(),
        decided,
        evidence={
            0: Evidence((failure, replace(failure, container="d")), ("pod p on node n: NotReady",))
        },
        logs={(0, 0): "boom\n"},
        backoff=BACKOFF,
        group_count=1,
        now=NOW,
    )
    g = recorded.groups[0]
    assert (g.restarts, g.streak, g.total) == (1, 1, 1)
    (r,) = g.recreations
    assert r.failures[0].log == "log-0-1-0" and r.failures[1].log is None
    assert recorded.logs == {"log-0-1-0": "boom\n"}
    assert r.nodes == ("pod p on node n: NotReady",)
    (event,) = recorded.events
    assert event.reason == "GroupFailure" and event.note.startswith(
        "group 0: pod p container c exited 1 (Error) (+1 more); pod p on node n: NotReady"
    )


def test_histories_of_groups_scaled_away_are_dropped() -> None:
    h = history(g0=GroupHistory(restarts=1), g5=GroupHistory(restarts=2))
    recorded = record(
        h, FailureDecisions(), evidence={}, logs={}, backoff=BACKOFF, group_count=3, now=NOW
    )
    assert set(recorded.groups) == {0}
