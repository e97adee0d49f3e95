"""What the reconciler remembers of an LWS (reported invalid generations, claims warnings,
the last status write, the validated model) is forgotten once the LWS is gone (issue 12.7)."""

from __future__ import annotations

import datetime
from types import MappingProxyType
from typing import Any, cast

from lws_operator.controller.lws.cache import Cache
from lws_operator.controller.lws.reconcile import Memory, Reconciler
from lws_operator.kube.client import Kube
from lws_operator.kube.events import EventRecorder
from lws_operator.plan.events import Event

NOW = datetime.datetime(2026, 12, 7, tzinfo=datetime.UTC)


class _Events:
    def __init__(self) -> None:
        self.forgotten: list[str] = []
        self.posted: list[Event] = []

    async def post(self, regarding: Any, event: Event) -> None:
        self.posted.append(event)

    def forget(self, uid: str) -> None:
        self.forgotten.append(uid)


def invalid(generation: int) -> dict[str, Any]:
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {
            "name": "bad",
            "namespace": "ns",
            "uid": "u",
            "generation": generation,
            "resourceVersion": str(generation),
        },
        "spec": {"replicas": "many"},
    }


async def test_memory_of_an_lws_is_kept_while_it_exists_and_dropped_with_it() -> None:
    cache, events = Cache(), _Events()
    store: dict[tuple[str, str], list[dict[str, Any]]] = {("ns", "bad"): [invalid(1)]}
    cache.bind({"lws_objects": store})
    r = Reconciler(cast(Kube, None), cache, cast(EventRecorder, events))
    r.memory[("ns", "other")] = Memory()
    r.memory[("ns", "other")].reported.first(("claims", "k"))
    assert await r(("ns", "bad")) is None
    assert await r(("ns", "bad")) is None  # one Warning per generation
    assert [e.reason for e in events.posted] == ["InvalidSpec"]
    assert r.memory[("ns", "bad")].reported_invalid == {1}
    store.clear()  # deleted
    assert await r(("ns", "bad")) is None
    assert ("ns", "bad") not in r.memory and ("ns", "other") in r.memory


def test_the_leader_step_is_planned_again_only_when_what_it_is_planned_from_changes(
    monkeypatch: Any,
) -> None:
    """A pod event, a status write to the LWS or the StatefulSet controller's status update
    (a new resourceVersion, a status manager's managedFields) leave the LWS's and the leader
    StatefulSet's spec and metadata as they were: their comparison (plan_leader) is not
    redone; a change of either's generation or metadata, the revision or the rollout step
    plans it again."""

    from lws_operator.api.models import LeaderWorkerSet
    from lws_operator.plan.events import warning
    from lws_operator.plan.lws import reconcile
    from lws_operator.plan.lws.leader import LeaderStep
    from lws_operator.plan.lws.observed import Observed
    from lws_operator.plan.lws.revision import RevisionChoice
    from lws_operator.plan.lws.rollout import RolloutPlan
    from tests.unit.api.lws_testdata import base_object

    planned: list[tuple[Any, ...]] = []

    def plan_leader(lws: Any, **kw: Any) -> Any:
        planned.append((lws.metadata["resourceVersion"], kw["current"], kw["key"]))
        return LeaderStep(None, warning("Failed", "Update", "x"))

    monkeypatch.setattr(reconcile, "plan_leader", plan_leader)
    body = base_object("demo")
    body["metadata"].update(namespace="ns", uid="u", resourceVersion="1", generation=1)
    lws = LeaderWorkerSet.model_validate(body)
    memory = Memory()
    status_manager = {"manager": "kube-controller-manager", "subresource": "status", "time": ""}

    def step(
        rv: str,
        sts_rv: str,
        key: str = "k",
        replicas: int = 2,
        generation: int = 1,
        sts_generation: int = 1,
        sts_labels: dict[str, str] | None = None,
    ) -> object:
        meta = {**body["metadata"], "resourceVersion": rv, "generation": generation}
        observed = Observed({**body, "metadata": meta})
        p = reconcile._Planner(lws, observed, memory, reconcile.Settings(), NOW, 0.0)
        sts = {
            "metadata": {
                "uid": "s",
                "resourceVersion": sts_rv,
                "generation": sts_generation,
                "labels": sts_labels or {},
                "managedFields": [
                    {"manager": "lws", "operation": "Apply"},
                    {**status_manager, "time": sts_rv},
                ],
            },
            "status": {"readyReplicas": int(sts_rv)},
        }
        p._leader(sts, RevisionChoice(key, False), RolloutPlan(0, replicas, 1))
        assert memory.leader is not None
        return memory.leader[1]

    first = step("1", "10")
    assert step("1", "10") is first and len(planned) == 1
    assert step("2", "11") is first, "status updates of both: not planned again"
    changed = [
        step("2", "11", generation=2),
        step("2", "11", generation=2, sts_generation=2),
        step("2", "11", generation=2, sts_generation=2, sts_labels={"a": "b"}),
        step("2", "11", generation=2, sts_generation=2, sts_labels={"a": "b"}, key="k2"),
    ]
    assert all(c is not first for c in changed) and len(planned) == 5
    step("2", "11", generation=2, sts_generation=2, sts_labels={"a": "b"}, key="k2", replicas=3)
    assert len(planned) == 6


def test_workers_are_planned_for_the_groups_observed_anew_unless_the_rest_changed(
    monkeypatch: Any,
) -> None:
    """A pass plans the workers of the groups observed anew and of those whose last plan was
    not NOTHING (waiting, retrying); every group's once the LWS's spec, labels, annotations or
    its Services, revisions or PodGroups changed. A recreated group waits for its next
    observation."""
    from lws_operator.api.models import LeaderWorkerSet
    from lws_operator.plan.lws import reconcile
    from lws_operator.plan.lws.groups import Group
    from lws_operator.plan.lws.observed import Observed
    from lws_operator.plan.lws.workers import NOTHING, WorkerPlan
    from tests.unit.api.lws_testdata import base_object

    planned: list[int] = []
    waiting = {3}

    def plan_workers(lws: Any, group: Group, **kw: Any) -> WorkerPlan:
        planned.append(group.index)
        return WorkerPlan(retry=1.0) if group.index in waiting else NOTHING

    monkeypatch.setattr(reconcile, "plan_workers", plan_workers)
    body = base_object("demo")
    body["metadata"].update(namespace="ns", uid="u", resourceVersion="1", generation=1)
    memory = Memory()

    observations = iter(range(1, 1000))
    observed_at: dict[int, int] = {}

    def one_pass(
        fresh: set[int],
        count: int = 6,
        shared: int = 0,
        generation: int = 1,
        recreated: frozenset[int] = frozenset(),
    ) -> list[int]:
        meta = {**body["metadata"], "generation": generation}
        lws = LeaderWorkerSet.model_validate({**body, "metadata": meta})
        groups = [Group(i, None) for i in range(count)]
        for index in sorted(fresh):  # as the cache numbers its observations
            observed_at.pop(index, None)
            observed_at[index] = next(observations)
        obs = Observed(
            body,
            groups=groups,
            observed_at=MappingProxyType(observed_at),
            worker_input_events=shared,
        )
        assert sorted(memory.workers.take(obs.observed_at)) == sorted(fresh), "taken anew"
        planned.clear()
        planner = reconcile._Planner(lws, obs, memory, reconcile.Settings(), NOW, 0.0)
        planner._workers(set(recreated))
        for step in planner.steps:  # as the reconciler takes them
            if isinstance(step, reconcile.Decided):
                for index in step.settled:
                    memory.workers.planned(index, NOTHING)
        return list(planned)

    assert one_pass(set(range(6))) == [0, 1, 2, 3, 4, 5]  # first: every group
    assert one_pass(set()) == [3]  # only the one still waiting
    assert one_pass({1}) == [1, 3]  # a pod event of group 1
    assert one_pass({2}, recreated=frozenset({2})) == [3]  # recreated: next time
    assert one_pass(set()) == [2, 3]
    assert one_pass(set(), shared=1) == [0, 1, 2, 3, 4, 5]  # a Service changed
    assert one_pass(set(), shared=1, generation=2) == [0, 1, 2, 3, 4, 5]  # the spec
    waiting.clear()
    assert one_pass(set(), shared=1, generation=2) == [3]
    assert one_pass(set(), shared=1, generation=2) == []  # at rest: no group
    assert one_pass({5}, count=4, shared=1, generation=2) == []  # scaled down
    assert one_pass({4, 5}, count=6, shared=1, generation=2) == [4, 5]  # and up
