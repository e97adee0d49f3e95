"""One reconcile of a LeaderWorkerSet, decided (plan/lws/reconcile.py): the steps of a pass
in order for the situations that shape it, from observed objects alone."""

from __future__ import annotations

import datetime
from typing import Any

from lws_operator.api.models import LeaderWorkerSet
from lws_operator.plan.events import warning
from lws_operator.plan.lws import reconcile as p
from lws_operator.plan.lws.groups import observe_groups
from lws_operator.plan.lws.observed import Observed
from tests.unit.api.lws_testdata import base_object
from tests.unit.plan.test_restart import pod, world

NOW = datetime.datetime(2026, 12, 7, 6, 0, tzinfo=datetime.UTC)


def lws_of(name: str = "s", size: int = 3) -> tuple[LeaderWorkerSet, dict[str, Any]]:
    body = base_object(name)
    body["metadata"].update(namespace="ns", uid="lws-uid", resourceVersion="1", generation=1)
    body["spec"]["leaderWorkerTemplate"]["size"] = size
    return LeaderWorkerSet.model_validate(body), body


def plan_of(
    obs: Observed,
    settings: p.Settings | None = None,
    logs: list[tuple[str | None, str]] | None = None,
) -> tuple[p.Broken, p.PassPlan]:
    lws, _ = lws_of()
    memory, settings = p.Memory(), settings or p.Settings()
    broken = p.ask(lws, obs, memory, settings, NOW)
    return broken, p.plan_pass(lws, obs, memory, settings, broken, logs or [], now=NOW, clock=1.0)


def shape(plan: p.PassPlan) -> list[str]:
    """Each step, with the write's verb and kind or the event's reason."""
    out = []
    for step in plan.steps:
        match step:
            case p.Send(write):
                out.append(f"{write.verb} {write.kind}")
            case p.Post(event) | p.Report(_, event):
                out.append(f"{type(step).__name__} {event.reason}")
            case _:
                out.append(type(step).__name__)
    return out


def test_a_new_lws_gets_its_revision_then_its_leader_statefulset_and_service() -> None:
    _, body = lws_of()
    _, plan = plan_of(Observed(body))
    assert shape(plan) == [
        "Cover",
        "create ControllerRevision",
        "Post CreatingRevision",
        "apply StatefulSet",
        "Post GroupsProgressing",
        "create Service",
        "Status",
        "GroupsObserved",
    ]
    status = plan.steps[-2]
    assert isinstance(status, p.Status) and status.patch is not None


def test_a_leader_statefulset_not_ours_is_reported_and_nothing_else_done() -> None:
    _, body = lws_of()
    theirs = {"metadata": {"name": "s", "uid": "other", "ownerReferences": []}}
    broken, plan = plan_of(Observed(body, statefulsets={"s": theirs}))
    assert shape(plan) == ["Post FailedCreate"] and plan.retry is None
    assert broken.ask.reads == ()


def test_a_leader_statefulset_being_deleted_stops_the_pass() -> None:
    _, body = lws_of()
    going = {
        "metadata": {
            "name": "s",
            "uid": "sts",
            "deletionTimestamp": "2026-12-07T06:00:00Z",
            "ownerReferences": [{"uid": "lws-uid", "controller": True}],
        }
    }
    _, plan = plan_of(Observed(body, statefulsets={"s": going}))
    assert plan.steps == ()


def test_a_gang_provider_the_cluster_cannot_serve_is_reported_first() -> None:
    _, body = lws_of()
    unavailable = warning("GangSchedulingUnavailable", "Reconcile", "no PodGroups here")
    _, plan = plan_of(Observed(body), p.Settings(gang_unavailable=unavailable))
    assert shape(plan)[:2] == ["Report GangSchedulingUnavailable", "Cover"]


def test_a_restarted_worker_is_recorded_in_the_history_before_its_group_is_deleted() -> None:
    _, body = lws_of()
    pods, stss = world(s_1_2=pod("s-1-2", "s-1-sts-uid", group=1, worker=2, restarts=1))
    leader_sts = {
        "metadata": {
            "name": "s",
            "uid": "leader-sts",
            "ownerReferences": [{"uid": "lws-uid", "controller": True}],
        },
        "spec": {"replicas": 2},
    }
    groups = observe_groups(
        lws_name="s", count=2, leader_sts_uid="leader-sts", pods=pods, statefulsets=stss
    )
    obs = Observed(body, statefulsets={**stss, "s": leader_sts}, pods=pods, groups=groups)
    broken, plan = plan_of(obs)
    assert [r.index for r, _, _ in broken.ask.decided.recreate] == [1]
    steps = shape(plan)
    history, delete = steps.index("WriteHistory"), steps.index("DeleteGroup")
    assert history < delete, steps
    (deletion,) = [s for s in plan.steps if isinstance(s, p.DeleteGroup)]
    assert deletion.recreated is not None and deletion.index == 1
    assert [w.name for w in deletion.writes][:2] == ["s-1", "s-1"]  # its leader, then its workers
    assert deletion.writes[0].kind == "Pod" and deletion.writes[1].kind == "StatefulSet"
    # A failed group: its pods get the failed-group grace (1 s), its StatefulSet none.
    assert [w.grace_seconds for w in deletion.writes if w.kind == "Pod"] == [1, 1, 1]
