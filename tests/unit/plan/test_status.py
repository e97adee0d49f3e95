"""Status, conditions and their events (upstream's updateStatus and updateConditions,
pkg/controllers/leaderworkerset_controller.go)."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lws_operator.plan.events import normal
from lws_operator.plan.lws.groups import Group
from lws_operator.plan.lws.status import (
    COUNTERS_HOLD_MAX,
    COUNTERS_QUIET,
    StatusPacing,
    StatusResult,
    compute_status,
    count_groups,
    counters_only,
    hpa_pod_selector,
    plan_status_write,
)
from tests.unit.plan.groups import CURRENT, group

T0, T1, T2 = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z", "2026-01-01T00:02:00Z"
AVAILABLE, PROGRESSING, UPDATING = "Available", "Progressing", "UpdateInProgress"


def status(
    groups: list[Group],
    *,
    replicas: int | None = None,
    partition: int = 0,
    size: int = 2,
    sts_status_replicas: int | None = None,
    generation: int = 1,
    old: list[dict[str, Any]] | None = None,
    now: str = T1,
) -> StatusResult:
    replicas = len(groups) if replicas is None else replicas
    return compute_status(
        groups=groups,
        key=CURRENT,
        replicas=replicas,
        partition=partition,
        size=size,
        sts_status_replicas=len(groups) if sts_status_replicas is None else sts_status_replicas,
        generation=generation,
        lws_name="test-sample",
        old_conditions=old or [],
        now=now,
    )


def cond(result: StatusResult, type_: str) -> dict[str, Any] | None:
    found = [c for c in result.status["conditions"] if c["type"] == type_]
    assert len(found) <= 1
    return found[0] if found else None


def true_types(result: StatusResult) -> set[str]:
    return {c["type"] for c in result.status["conditions"] if c["status"] == "True"}


# --- Counting -------------------------------------------------------------------------------


def test_counts_ready_and_updated_including_surge_groups() -> None:
    groups = [
        group(0, updated=False),
        group(1, ready=False),
        group(2),
        group(3, ready=False),  # surge
        group(4),  # surge
    ]
    result = status(groups, replicas=3, sts_status_replicas=5)
    assert result.status["readyReplicas"] == 3
    assert result.status["updatedReplicas"] == 4
    assert result.status["replicas"] == 5  # the leader sts status.replicas, surge included


def test_a_group_is_ready_and_updated_only_with_its_workers() -> None:
    groups = [
        group(0, workers_ready=False),
        group(1, workers_updated=False),
        group(2, ready=False, workers_ready=True),
        group(3, updated=False, workers_updated=True),
    ]
    counts = count_groups(groups, key=CURRENT, replicas=4, partition=0, size=3)
    assert (counts.ready, counts.updated) == (2, 2)
    # Ready leaders (0, 1, 3) and available workers (1, 2, 3): what the pacing watches move.
    assert counts.ready_members == 6


def test_size_one_ignores_workers() -> None:
    groups = [group(0, workers=False, workers_ready=False, workers_updated=False)]
    counts = count_groups(groups, key=CURRENT, replicas=1, partition=0, size=1)
    assert (counts.ready, counts.updated, counts.current) == (1, 1, 1)


def test_group_without_worker_sts_is_not_counted() -> None:
    groups = [group(0), group(1, workers=False)]
    counts = count_groups(groups, key=CURRENT, replicas=2, partition=0, size=2)
    assert (counts.ready, counts.updated, counts.current) == (1, 1, 1)


def test_zero_counters_are_left_out_as_upstream_omitempty() -> None:
    result = status([group(0, ready=False, updated=False)], sts_status_replicas=0)
    assert "readyReplicas" not in result.status
    assert "updatedReplicas" not in result.status
    assert "replicas" not in result.status
    assert result.status["observedGeneration"] == 1


def test_current_groups_are_those_in_partition_to_replicas() -> None:
    groups = [group(i) for i in range(6)]
    counts = count_groups(groups, key=CURRENT, replicas=4, partition=1, size=2)
    assert (counts.current, counts.ready_non_burst, counts.updated_and_ready) == (3, 4, 3)


def test_hpa_pod_selector_is_always_written() -> None:
    expected = (
        "leaderworkerset.sigs.k8s.io/name=test-sample,leaderworkerset.sigs.k8s.io/worker-index=0"
    )
    assert hpa_pod_selector("test-sample") == expected
    assert status([group(0)]).status["hpaPodSelector"] == expected


def test_status_keys_are_the_api_fields() -> None:
    result = status([group(0)], generation=7)
    assert set(result.status) == {
        "conditions",
        "readyReplicas",
        "updatedReplicas",
        "replicas",
        "hpaPodSelector",
        "observedGeneration",
    }
    assert result.status["observedGeneration"] == 7


# --- Choosing the condition -----------------------------------------------------------------


def test_all_ready_and_updated_is_available() -> None:
    result = status([group(0), group(1)])
    assert true_types(result) == {AVAILABLE}
    assert cond(result, AVAILABLE) == {
        "type": AVAILABLE,
        "status": "True",
        "observedGeneration": 1,
        "lastTransitionTime": T1,
        "reason": "AllGroupsReady",
        "message": "All replicas are ready",
    }


def test_unready_groups_are_progressing() -> None:
    result = status([group(0), group(1, ready=False)])
    assert true_types(result) == {PROGRESSING}
    assert cond(result, PROGRESSING) == {
        "type": PROGRESSING,
        "status": "True",
        "observedGeneration": 1,
        "lastTransitionTime": T1,
        "reason": "GroupsProgressing",
        "message": "Replicas are progressing",
    }


def test_outdated_groups_are_updating_and_progressing_in_one_pass() -> None:
    # Fix: upstream set Progressing only one reconcile after UpdateInProgress.
    result = status([group(0, updated=False), group(1)])
    assert true_types(result) == {UPDATING, PROGRESSING}
    updating = cond(result, UPDATING)
    assert updating is not None
    assert (updating["reason"], updating["message"]) == (
        "GroupsUpdating",
        "Rolling Upgrade is in progress",
    )


def test_zero_replicas_is_available() -> None:
    assert true_types(status([], replicas=0)) == {AVAILABLE}


def test_creation_without_worker_sts_is_progressing_not_updating() -> None:
    # "Ensure UpdateInProgress condition is not set during LWS initialization".
    result = status([group(0, ready=False, workers=False), group(1, ready=False, workers=False)])
    assert true_types(result) == {PROGRESSING}
    assert result.events == (
        normal(
            "GroupsProgressing",
            "Update",
            "Replicas are progressing, with 0 groups ready of total 2 groups",
        ),
    )


def test_partition_available_once_groups_at_or_above_p_are_updated() -> None:
    groups = [group(i, updated=i >= 4) for i in range(6)]
    result = status(groups, partition=4)
    assert true_types(result) == {AVAILABLE}
    assert not result.update_done  # P > 0: revisions are kept


def test_partition_still_updating_while_a_group_at_or_above_p_is_outdated() -> None:
    groups = [group(i, updated=i >= 5) for i in range(6)]
    assert true_types(status(groups, partition=4)) == {UPDATING, PROGRESSING}


def test_surge_groups_do_not_block_available() -> None:
    groups = [group(0), group(1), group(2, ready=False)]  # index 2 is surge for R = 2
    assert true_types(status(groups, replicas=2)) == {AVAILABLE}


def test_outdated_surge_group_does_not_mean_updating() -> None:
    groups = [group(0), group(1), group(2, updated=False, ready=False)]
    assert true_types(status(groups, replicas=2)) == {AVAILABLE}


def test_update_done() -> None:
    assert status([group(0), group(1)]).update_done
    assert not status([group(0), group(1, ready=False)]).update_done
    assert not status([group(0), group(1, updated=False)]).update_done
    assert status([], replicas=0).update_done
    assert not status([], replicas=0, partition=1).update_done


# --- Merge rules ----------------------------------------------------------------------------


def test_setting_available_turns_progressing_and_updating_false_keeping_their_text() -> None:
    rolling = status([group(0, updated=False), group(1)], now=T0)
    done = status([group(0), group(1)], old=rolling.status["conditions"], now=T1)
    assert true_types(done) == {AVAILABLE}
    for type_, message in (
        (PROGRESSING, "Replicas are progressing"),
        (UPDATING, "Rolling Upgrade is in progress"),
    ):
        flipped = cond(done, type_)
        assert flipped is not None
        assert flipped["status"] == "False"
        assert flipped["message"] == message  # kept from the True state, reason too
        assert flipped["reason"] == {PROGRESSING: "GroupsProgressing"}.get(type_, "GroupsUpdating")
        assert flipped["lastTransitionTime"] == T1
    assert [c["type"] for c in done.status["conditions"]] == [UPDATING, PROGRESSING, AVAILABLE]


def test_update_in_progress_stays_true_until_available() -> None:
    rolling = status([group(0, updated=False), group(1)], now=T0)
    # Every group updated, one not ready yet: Progressing only, UpdateInProgress untouched.
    waiting = status([group(0, ready=False), group(1)], old=rolling.status["conditions"], now=T1)
    assert true_types(waiting) == {UPDATING, PROGRESSING}
    assert waiting.status["conditions"] == rolling.status["conditions"]
    assert waiting.events == ()


def test_progressing_after_available_turns_available_false() -> None:
    available = status([group(0), group(1)], now=T0)
    broken = status([group(0), group(1, ready=False)], old=available.status["conditions"], now=T1)
    assert true_types(broken) == {PROGRESSING}
    old_available = cond(broken, AVAILABLE)
    assert old_available is not None
    assert old_available["status"] == "False"
    assert (old_available["reason"], old_available["message"]) == (
        "AllGroupsReady",
        "All replicas are ready",
    )
    assert broken.events == (
        normal(
            "GroupsProgressing",
            "Update",
            "Replicas are progressing, with 1 groups ready of total 2 groups",
        ),
    )


def test_false_condition_turning_true_gets_a_new_transition_time() -> None:
    available = status([group(0)], now=T0)
    broken = status([group(0, ready=False)], old=available.status["conditions"], now=T1)
    again = status([group(0)], old=broken.status["conditions"], now=T2)
    condition = cond(again, AVAILABLE)
    assert condition is not None
    assert (condition["status"], condition["lastTransitionTime"]) == ("True", T2)
    progressing = cond(again, PROGRESSING)
    assert progressing is not None
    assert (progressing["status"], progressing["lastTransitionTime"]) == ("False", T2)


def test_generation_change_updates_observed_generation_without_a_transition() -> None:
    # Fix: upstream replaced the True condition (new lastTransitionTime, new event) whenever
    # only the generation moved, e.g. on every scale.
    first = status([group(0), group(1, ready=False)], generation=1, now=T0)
    second = status(
        [group(0), group(1, ready=False)], generation=2, old=first.status["conditions"], now=T1
    )
    assert all(c["observedGeneration"] == 2 for c in second.status["conditions"])
    progressing = cond(second, PROGRESSING)
    assert progressing is not None and progressing["lastTransitionTime"] == T0
    assert second.events == ()


def test_older_controller_reason_is_refreshed_without_a_transition() -> None:
    old = [
        {
            "type": PROGRESSING,
            "status": "True",
            "reason": "GroupsAreProgressing",
            "message": "Replicas are progressing",
            "lastTransitionTime": T0,
        }
    ]
    result = status([group(0, ready=False)], old=old, now=T1)
    progressing = cond(result, PROGRESSING)
    assert progressing is not None
    assert (progressing["reason"], progressing["lastTransitionTime"]) == ("GroupsProgressing", T0)
    assert result.events == ()


def test_foreign_conditions_are_kept() -> None:
    old = [{"type": "UpgradeInProgress", "status": "True", "reason": "x", "message": "y"}]
    result = status([group(0)], old=old, generation=3)
    assert result.status["conditions"][0] == {**old[0], "observedGeneration": 3}


def test_inputs_are_not_mutated() -> None:
    old = status([group(0, updated=False)], now=T0).status["conditions"]
    snapshot = copy.deepcopy(old)
    status([group(0)], old=old, generation=2, now=T1)
    assert old == snapshot


def test_events_for_each_condition_that_became_true() -> None:
    result = status([group(0, updated=False), group(1)])
    assert result.events == (
        normal(
            "GroupsUpdating",
            "Update",
            "Rolling Upgrade is in progress, with 2 groups ready of total 2 groups",
        ),
        normal(
            "GroupsProgressing",
            "Update",
            "Replicas are progressing, with 2 groups ready of total 2 groups",
        ),
    )
    available = status([group(0), group(1)], old=result.status["conditions"])
    assert available.events == (
        normal(
            "AllGroupsReady",
            "Update",
            "All replicas are ready, with 2 groups ready of total 2 groups",
        ),
    )


# --- Properties -----------------------------------------------------------------------------

observed_groups = st.lists(
    st.builds(
        group,
        index=st.integers(0, 7),
        ready=st.booleans(),
        updated=st.booleans(),
        workers=st.booleans(),
        workers_ready=st.booleans(),
        workers_updated=st.booleans(),
    ),
    max_size=8,
)
old_conditions = st.lists(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from([AVAILABLE, PROGRESSING, UPDATING, "Other"]),
            "status": st.sampled_from(["True", "False", "Unknown"]),
            "reason": st.sampled_from(["AllGroupsReady", "GroupsProgressing", "Old"]),
            "message": st.just("m"),
            "lastTransitionTime": st.just(T0),
            "observedGeneration": st.integers(0, 3),
        }
    ),
    max_size=4,
    unique_by=lambda c: c["type"],  # listType=map keyed by type
)
observation = st.fixed_dictionaries(
    {
        "groups": observed_groups,
        "replicas": st.integers(0, 6),
        "partition": st.integers(0, 7),
        "size": st.integers(1, 3),
        "sts_status_replicas": st.integers(0, 8),
        "generation": st.integers(1, 4),
    }
)


def run(obs: dict[str, Any], old: list[dict[str, Any]], now: str) -> StatusResult:
    return compute_status(**obs, key=CURRENT, lws_name="x", old_conditions=old, now=now)


def assert_consistent(result: StatusResult, generation: int) -> None:
    trues = true_types(result)
    assert len(trues & {AVAILABLE, PROGRESSING}) == 1, "exactly one of Available/Progressing"
    assert UPDATING not in trues or PROGRESSING in trues
    assert all(c["observedGeneration"] == generation for c in result.status["conditions"])
    types = [c["type"] for c in result.status["conditions"]]
    assert len(types) == len(set(types))


@settings(max_examples=500, deadline=None)
@given(obs=observation, old=old_conditions)
def test_any_pass_is_consistent_and_idempotent(
    obs: dict[str, Any], old: list[dict[str, Any]]
) -> None:
    first = run(obs, old, T1)
    assert_consistent(first, obs["generation"])
    second = run(obs, first.status["conditions"], T2)
    assert second.status == first.status, "no lastTransitionTime churn"
    assert second.events == ()


@settings(max_examples=300, deadline=None)
@given(passes=st.lists(observation, min_size=1, max_size=6))
def test_sequences_of_observations(passes: list[dict[str, Any]]) -> None:
    conditions: list[dict[str, Any]] = []
    for n, obs in enumerate(passes):
        now = f"2026-01-01T00:{n:02d}:00Z"
        result = run(obs, conditions, now)
        assert_consistent(result, obs["generation"])
        before = {c["type"]: c for c in conditions}
        for c in result.status["conditions"]:
            old = before.get(c["type"])
            moved = old is None or old["status"] != c["status"]
            assert (c["lastTransitionTime"] == now) == moved, "a new time only on a transition"
        suffix = f", with {result.status.get('readyReplicas', 0)} groups ready of total"
        for event in result.events:
            assert event.note.endswith(f"{suffix} {obs['replicas']} groups")
        conditions = result.status["conditions"]


def test_only_counter_changes_may_wait_for_the_next_status_write() -> None:
    available = {"type": "Available", "status": "True", "reason": "AllGroupsReady"}
    progressing = {"type": "Progressing", "status": "True", "reason": "GroupsProgressing"}
    old = {"replicas": 4, "readyReplicas": 2, "conditions": [progressing], "observedGeneration": 1}
    assert counters_only(old, {**old, "readyReplicas": 3, "updatedReplicas": 3})
    assert not counters_only(old, {**old, "readyReplicas": 4, "conditions": [available]})
    assert not counters_only(old, {**old, "observedGeneration": 2})
    assert not counters_only(old, {**old, "hpaPodSelector": "a=b"})
    assert not counters_only({}, {"replicas": 1})  # the first status is written at once


def write(old: dict[str, Any], new: StatusResult, *, last: float | None, now: float = 10.0) -> Any:
    return plan_status_write(
        observed=old,
        resource_version="7",
        result=new,
        pacing=StatusPacing(last_write=last),
        now=now,
    )


def test_a_status_write_carries_the_resource_version_it_was_computed_from() -> None:
    result = status([group(0)])
    decided = write({}, result, last=None)
    assert decided.patch == {"metadata": {"resourceVersion": "7"}, "status": result.status}
    same = write(result.status, result, last=None)
    assert (same.patch, same.wait) == (None, None)


def test_no_status_is_written_over_what_our_last_write_replaced() -> None:
    """Until the watch brings our write back, the cache shows the LWS at the resourceVersion
    it replaced: a status computed there is stale, and its write would lose (409) to our own.
    """
    result = status([group(0)])
    replaced = StatusPacing().written(9.0, over="7")
    behind = plan_status_write(
        observed={}, resource_version="7", result=result, pacing=replaced, now=10.0
    )
    assert (behind.patch, behind.wait, behind.pacing.written_over) == (None, None, "7")
    # The write came back (and someone changed the status since): written over the new one.
    caught_up = plan_status_write(
        observed={}, resource_version="8", result=result, pacing=behind.pacing, now=10.0
    )
    assert caught_up.patch == {"metadata": {"resourceVersion": "8"}, "status": result.status}
    assert caught_up.pacing.written_over is None
    # A write that changed nothing brings no watch event: nothing to wait for.
    unchanged = StatusPacing().written(9.0, over=None)
    assert plan_status_write(
        observed={}, resource_version="7", result=result, pacing=unchanged, now=10.0
    ).patch == {"metadata": {"resourceVersion": "7"}, "status": result.status}


def test_counters_gone_to_zero_are_removed_and_counter_changes_wait() -> None:
    ready = status([group(0)])
    unready = status([group(0, ready=False)], old=ready.status["conditions"])
    decided = write(ready.status, unready, last=9.5)
    assert decided.patch is None or decided.wait is None
    # Available -> Progressing is a condition change: written at once, readyReplicas removed.
    assert decided.patch is not None
    assert decided.patch["status"]["readyReplicas"] is None
    settled = status([group(0)], old=ready.status["conditions"])
    counters = {**settled.status, "readyReplicas": 2}
    held = write(counters, settled, last=9.5)
    assert held.patch is None and held.wait == COUNTERS_QUIET


def storm(
    changes: list[float],
    until: float,
    values: list[int] | None = None,
    members: Sequence[float] = (),
) -> tuple[list[float], int]:
    """When the status is written if readyReplicas changes at each of ``changes`` (seconds)
    to the next of ``values`` (by default a value not seen before), and the groups' ready
    members change at each of ``members`` (the counters staying), with every pass run as the
    operator runs them: at each change and when a held write is due."""
    settled = status([group(i) for i in range(3)])
    stored = dict(settled.status)
    pacing, writes, due = StatusPacing(), [], None
    events = sorted([(t, True) for t in changes] + [(t, False) for t in members])
    ready = moved = seen = 0
    while events or due is not None:
        now = min([*(t for t, _ in events[:1]), *([due] if due is not None else [])])
        while events and events[0][0] == now:
            _, counter = events.pop(0)
            if counter:
                ready = ready + 1 if values is None else values[seen]
                seen += 1
            moved += 1
        if now > until:
            break
        result = StatusResult(
            {**settled.status, "readyReplicas": ready}, True, (), ready_members=moved
        )
        decided = plan_status_write(
            observed=stored, resource_version="1", result=result, pacing=pacing, now=now
        )
        pacing, due = decided.pacing, None if decided.wait is None else now + decided.wait
        if decided.patch is not None:
            stored = {**stored, **decided.patch["status"]}
            pacing = pacing.written(now)
            writes.append(now)
    return writes, stored["readyReplicas"]


def test_a_lone_counter_change_is_written_at_once() -> None:
    assert storm([5.0], until=100) == ([5.0], 1)


def test_counters_churning_are_written_at_most_every_hold_max_and_once_still() -> None:
    flips = [i * 0.05 for i in range(1, 1201)]  # 20 changes a second for 60 s
    writes, stored = storm(flips, until=100)
    assert writes[0] == 0.05  # the first, after a quiet spell, at once
    gaps = [b - a for a, b in itertools.pairwise(writes)]
    assert all(g >= COUNTERS_HOLD_MAX - 1e-9 for g in gaps[:-1]), gaps
    assert len(writes) <= 60 / COUNTERS_HOLD_MAX + 2
    # The last change is written by the time the counters have been still COUNTERS_QUIET.
    assert stored == len(flips) and writes[-1] <= flips[-1] + COUNTERS_QUIET


def test_counters_flapping_around_the_stored_value_are_no_quiet_spell() -> None:
    flips = [i * 0.05 for i in range(1, 1201)]
    values = [3 + (i % 2) for i in range(1, 1201)]  # 4, 3, 4, 3, ...: back to stored, often
    writes, stored = storm(flips, until=100, values=values)
    assert writes[0] == 0.05 and len(writes) <= 60 / COUNTERS_HOLD_MAX + 2, writes
    assert stored == values[-1]


def test_counters_changing_slower_than_quiet_are_each_written() -> None:
    flips = [i * (COUNTERS_QUIET + 0.5) for i in range(1, 11)]
    assert storm(flips, until=100) == (flips, len(flips))


def test_counters_resting_while_the_pods_flap_on_are_no_quiet_spell() -> None:
    """A readiness storm: readyReplicas rests longer than COUNTERS_QUIET between its changes
    while ready members come and go all the time; written at most every COUNTERS_HOLD_MAX,
    and COUNTERS_QUIET after the pods stop."""
    flips = [i * (COUNTERS_QUIET + 0.5) for i in range(1, 25)]  # every 2.5 s for 60 s
    flaps = [i * 0.05 + 0.01 for i in range(1, 1201)]  # 20 pods a second
    writes, stored = storm(flips, until=100, members=flaps)
    assert writes[0] == flaps[0]  # the first pass, after a quiet spell: at once
    gaps = [b - a for a, b in itertools.pairwise(writes)]
    assert all(g >= COUNTERS_HOLD_MAX - 1e-9 for g in gaps[:-1]), gaps
    assert stored == len(flips) and writes[-1] <= flaps[-1] + COUNTERS_QUIET + 1e-9, writes
