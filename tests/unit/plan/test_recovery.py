"""One pass's handling of broken groups in two phases (plan/lws/recovery.py): what is decided
before the log tails are read, how the reads' outcomes join the evidence, and the history
write that records the recreations before they happen."""

from __future__ import annotations

import datetime
from dataclasses import replace
from typing import Any

from lws_operator.api import constants as c
from lws_operator.plan.lws import recovery
from lws_operator.plan.lws.backoff import Backoff
from lws_operator.plan.lws.evidence import log_unavailable
from lws_operator.plan.lws.failures import GRACE_INVALID, REQUEST_INVALID, FailureDecisions
from lws_operator.plan.lws.groups import Group
from lws_operator.plan.lws.history import History, Limits
from lws_operator.plan.lws.restart import Recreate
from tests.unit.plan import test_failures as failures_test
from tests.unit.plan.groups import leader_pod

NOW = datetime.datetime(2026, 12, 7, 6, 0, tzinfo=datetime.UTC)
HISTORY = History("test-sample-restart-history", exists=True, resource_version="1")


def crashed(index: int) -> dict[str, Any]:
    pod = leader_pod(index)
    pod["spec"] = {"nodeName": "n1"}
    pod["status"]["containerStatuses"] = [
        {
            "name": "main",
            "restartCount": 1,
            "lastState": {"terminated": {"exitCode": 137, "reason": "Error"}},
            "state": {"running": {}},
        }
    ]
    return pod


def situation(
    *,
    planned: tuple[Recreate, ...] = (),
    groups: tuple[Group, ...] = (),
    history: History = HISTORY,
    annotations: dict[str, str] | None = None,
    nodes: dict[str, Any] | None = None,
) -> recovery.Situation:
    return recovery.Situation(
        groups=groups,
        size=1,
        planned=planned,
        history=history,
        nodes=nodes or {},
        healthy_nodes=frozenset({"n1"}) if nodes is None else frozenset(),
        annotations=annotations or {},
        max_restarts=None,
        backoff=Backoff(initial=10, maximum=300, reset_after=600),
        limits=Limits(),
        now=NOW,
    )


def broken(index: int) -> tuple[Group, Recreate]:
    """A group whose leader's container crashed, and its recreation."""
    pod = crashed(index)
    _, plan = failures_test.broken(index)
    return Group(index, pod), replace(plan, leader=pod, members=(pod,), lost=frozenset())


def test_at_rest_nothing_is_decided_read_or_reported() -> None:
    a = recovery.ask(situation(groups=(Group(0, leader_pod(0)),)))
    assert recovery.decides_nothing(a.decided)
    assert (a.reports, a.reads, a.retry, recovery.to_recreate(a)) == ((), (), None, ())


def test_a_crashed_group_asks_for_its_log_tail_then_records_it_before_its_recreation() -> None:
    group, plan = broken(0)
    s = situation(planned=(plan,), groups=(group,))
    a = recovery.ask(s)
    assert not recovery.decides_nothing(a.decided)
    assert [(i, r.pod, r.container, r.previous) for i, r in a.reads] == [
        (0, "test-sample-0", "main", True)
    ]
    evidence, logs = recovery.with_logs(a, [("boom\n", "")])
    assert logs == {(0, 0): "boom\n"}
    rec = recovery.record(s, a, evidence, logs, lws_name="test-sample", namespace="ns", lws_uid="u")
    assert rec.write is not None and rec.history.groups[0].restarts == 1
    assert [e.reason for e in rec.events] == ["GroupFailure"]
    assert recovery.to_recreate(a) == (plan,)


def test_a_failed_group_is_torn_down_within_the_failed_group_grace() -> None:
    """Its pods get the configured grace (1 s by default), or the annotation's; a requested
    recreation gives each pod its own, as a rollout does."""
    _, plan = broken(0)

    def graces(annotations: dict[str, str], **kw: Any) -> set[int | None]:
        a = recovery.ask(replace(situation(annotations=annotations), **kw))
        return {w.grace_seconds for w in recovery.deletion(a, plan) if w.kind == "Pod"}

    assert graces({}) == {1}
    assert graces({}, failed_group_grace=None) == {None}
    assert graces({c.FAILED_GROUP_GRACE_ANNOTATION: "5"}) == {5}
    assert graces({c.FAILED_GROUP_GRACE_ANNOTATION: "pod"}) == {None}
    requested = replace(plan, why="requested")
    a = recovery.ask(situation())
    assert {w.grace_seconds for w in recovery.deletion(a, requested)} == {None}


def test_a_bad_failed_group_grace_is_reported_and_the_configuration_applies() -> None:
    a = recovery.ask(situation(annotations={c.FAILED_GROUP_GRACE_ANNOTATION: "0"}))
    ((about, event),) = a.reports
    assert about[0] == "grace" and event.reason == GRACE_INVALID and event.type == "Warning"
    assert c.FAILED_GROUP_GRACE_ANNOTATION in event.note and a.grace == 1


def test_a_log_that_cannot_be_read_is_recorded_as_why_not() -> None:
    group, plan = broken(0)
    a = recovery.ask(situation(planned=(plan,), groups=(group,)))
    why = log_unavailable("404 pods not found")
    evidence, logs = recovery.with_logs(a, [(None, why)])
    assert logs == {} and evidence[0].failures[0].log_error == why


def test_a_requested_recreation_reads_no_log() -> None:
    group, _ = broken(1)
    groups = (Group(0, leader_pod(0)), group)
    a = recovery.ask(situation(groups=groups, annotations={c.RECREATE_GROUPS_ANNOTATION: "1"}))
    assert a.reads == () and [p.index for p in recovery.to_recreate(a)] == [1]
    assert a.handled_request == "1"


def test_reports_name_the_bad_request_and_each_pod_on_a_node_not_ready() -> None:
    pod = crashed(0)
    nodes = {
        "n1": {
            "metadata": {"name": "n1"},
            "status": {"conditions": [{"type": "Ready", "status": "False"}]},
        }
    }
    a = recovery.ask(
        situation(
            groups=(Group(0, pod),),
            annotations={c.RECREATE_GROUPS_ANNOTATION: "one"},
            nodes=nodes,
        )
    )
    about = [key[0] for key, _ in a.reports]
    assert about == ["node", "request"]
    assert a.reports[1][1].reason == REQUEST_INVALID


def test_a_history_not_ours_is_reported_never_written() -> None:
    theirs = History("test-sample-restart-history", exists=True, owned=False)
    assert recovery.history_report(theirs) is not None
    assert recovery.history_report(HISTORY) is None


def test_the_memo_key_of_a_record_that_decides_nothing_follows_the_history() -> None:
    s = situation()
    a = recovery.ask(s)
    later = situation(history=History(HISTORY.name, exists=True, resource_version="2"))
    assert recovery.record_key(s, a) != recovery.record_key(later, recovery.ask(later))
    assert recovery.decides_nothing(FailureDecisions())
