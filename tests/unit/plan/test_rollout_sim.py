"""``kubectl lws plan``'s simulation: the operator's planner, stepped with groups becoming
ready one at a time."""

from __future__ import annotations

import copy
from typing import Any

from lws_operator.api.models import LeaderWorkerSet, LeaderWorkerSetSpec
from lws_operator.plan.lws.rollout_sim import format_steps, simulate_rollout
from tests.unit.api.lws_testdata import base_object


def spec(body: dict[str, Any]) -> LeaderWorkerSetSpec:
    return LeaderWorkerSet.model_validate(body).spec


def changed(body: dict[str, Any], image: str = "new:2", **strategy: Any) -> dict[str, Any]:
    new = copy.deepcopy(body)
    new["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["image"] = image
    if strategy:
        new["spec"]["rolloutStrategy"] = {
            "type": "RollingUpdate",
            "rollingUpdateConfiguration": strategy,
        }
    return new


def four() -> dict[str, Any]:
    body = base_object("x")
    body["spec"]["replicas"] = 4
    return body


def test_default_strategy_replaces_one_group_at_a_time_from_the_top() -> None:
    steps = simulate_rollout(spec(four()), spec(changed(four())))
    assert [(s.replicas, s.partition) for s in steps] == [
        (4, 0),
        (4, 4),
        (4, 3),
        (4, 2),
        (4, 1),
        (4, 0),
        (4, 0),
    ]
    assert [s.unready for s in steps[2:6]] == [(3,), (2,), (1,), (0,)]
    assert steps[-1].updated == (0, 1, 2, 3) and steps[-1].unready == ()
    assert steps[-1].note == "after group 0 became ready: at rest"
    assert steps[3].note == "after group 3 became ready: replaces groups 2"


def test_max_surge_adds_a_group_first_and_removes_it_last() -> None:
    new = changed(four(), maxUnavailable=1, maxSurge=1)
    steps = simulate_rollout(spec(four()), spec(new))
    assert steps[1].replicas == 5 and steps[1].note == "creates groups 4"
    assert steps[2].unready == (2, 3)  # the surge group lets one more old group go down
    assert max(len(s.unready) for s in steps) == 2
    assert steps[-1].replicas == 4 and steps[-1].updated == (0, 1, 2, 3)
    assert any("removes groups 4" in s.note for s in steps)


def test_partition_stops_the_rollout_above_it() -> None:
    new = changed(four(), partition=2)
    steps = simulate_rollout(spec(four()), spec(new))
    assert steps[-1].partition == 2 and steps[-1].updated == (2, 3)


def test_scale_without_template_change_only_adds_groups() -> None:
    new = four()
    new["spec"]["replicas"] = 6
    steps = simulate_rollout(spec(four()), spec(new))
    assert [(s.replicas, s.partition) for s in steps] == [(4, 0), (6, 0), (6, 0)]
    assert steps[1].note == "creates groups 4,5" and steps[1].unready == (4, 5)


def test_unready_groups_in_the_current_state_are_replaced_first_for_free() -> None:
    states = [(True, True)] * 3 + [(False, True)]
    steps = simulate_rollout(spec(four()), spec(changed(four())), states=states)
    assert steps[0].unready == (3,)
    assert steps[-1].updated == (0, 1, 2, 3) and steps[-1].unready == ()


def test_table() -> None:
    text = format_steps(simulate_rollout(spec(four()), spec(changed(four()))))
    lines = text.splitlines()
    assert lines[0].split() == [
        "STEP",
        "REPLICAS",
        "PARTITION",
        "UPDATED",
        "NOT",
        "READY",
        "WHAT",
        "HAPPENS",
    ]
    assert lines[1].split()[:5] == ["0", "4", "0", "-", "-"]
    assert lines[3].endswith("replaces groups 3")
