"""The DisaggregatedSet rollout arithmetic, against upstream's planner cases
(``pkg/controllers/disaggregatedset/planner_test.go`` and the ``scaleDownOld`` and
``extractRollingUpdateConfig`` cases of ``executor_test.go`` at v0.10.0, read as behaviour
facts), plus properties over random rollouts: it completes, never goes back, never orphans a
role, keeps each role's surge and unavailability budgets, and keeps the roles within one step
of each other."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lws_operator.plan.ds.rollout import (
    DEFAULT,
    Budget,
    OldRevision,
    Step,
    _next_new,
    _next_old,
    all_steps,
    batch_size,
    next_step,
    role_budget,
    spread_drain,
    total_steps,
)

S1 = [DEFAULT, DEFAULT]  # upstream's DefaultRollingUpdateConfig(2): maxSurge 1, maxUnavailable 0


def surge(*values: int) -> list[Budget]:
    return [Budget(v, 0) for v in values]


def unavailable(*values: int) -> list[Budget]:
    return [Budget(0, v) for v in values]


def steps(*pairs: tuple[tuple[int, ...], tuple[int, ...]]) -> list[Step]:
    return [Step(old, new) for old, new in pairs]


# name, initial old, target, budgets, every step (TestComputeAllSteps_ExactSequence).
EXACT = [
    (
        "small_1_1_surge1",
        (1, 1),
        (1, 1),
        S1,
        steps(((1, 1), (0, 0)), ((1, 1), (1, 1)), ((0, 0), (1, 1))),
    ),
    (
        "small_2_2_surge1",
        (2, 2),
        (2, 2),
        S1,
        steps(
            ((2, 2), (0, 0)), ((2, 2), (1, 1)), ((1, 1), (1, 1)),
            ((1, 1), (2, 2)), ((0, 0), (2, 2)),
        ),
    ),
    (
        "small_3_3_surge1",
        (3, 3),
        (3, 3),
        S1,
        steps(
            ((3, 3), (0, 0)), ((3, 3), (1, 1)), ((2, 2), (1, 1)), ((2, 2), (2, 2)),
            ((1, 1), (2, 2)), ((1, 1), (3, 3)), ((0, 0), (3, 3)),
        ),
    ),
    (
        "medium_6_2_surge1",
        (6, 2),
        (6, 2),
        S1,
        steps(
            ((6, 2), (0, 0)), ((6, 2), (1, 1)), ((5, 2), (1, 1)), ((5, 2), (2, 1)),
            ((4, 2), (2, 1)), ((4, 2), (3, 1)), ((3, 1), (3, 1)), ((3, 1), (4, 2)),
            ((2, 1), (4, 2)), ((2, 1), (5, 2)), ((1, 1), (5, 2)), ((1, 1), (6, 2)),
            ((0, 0), (6, 2)),
        ),
    ),
    (
        "medium_6_2_surge2",
        (6, 2),
        (6, 2),
        surge(2, 2),
        steps(
            ((6, 2), (0, 0)), ((6, 2), (2, 1)), ((4, 2), (2, 1)), ((4, 2), (4, 2)),
            ((2, 1), (4, 2)), ((2, 1), (6, 2)), ((0, 0), (6, 2)),
        ),
    ),
    (
        "medium_6_4_surge2",
        (6, 4),
        (6, 4),
        surge(2, 2),
        steps(
            ((6, 4), (0, 0)), ((6, 4), (2, 2)), ((4, 3), (2, 2)), ((4, 3), (4, 3)),
            ((2, 2), (4, 3)), ((2, 2), (6, 4)), ((0, 0), (6, 4)),
        ),
    ),
    (
        "asymmetric_10_1_surge1",
        (10, 1),
        (10, 1),
        S1,
        [Step((10, 1), (0, 0)), Step((10, 1), (1, 1))]
        + [
            s
            for k in range(1, 10)
            for s in (Step((10 - k, 1), (k, 1)), Step((10 - k, 1), (k + 1, 1)))
        ]
        + [Step((0, 0), (10, 1))],
    ),
    (
        "asymmetric_1_10_surge1",
        (1, 10),
        (1, 10),
        S1,
        [Step((1, 10), (0, 0)), Step((1, 10), (1, 1))]
        + [
            s
            for k in range(1, 10)
            for s in (Step((1, 10 - k), (1, k)), Step((1, 10 - k), (1, k + 1)))
        ]
        + [Step((0, 0), (1, 10))],
    ),
    (
        "large_10_10_surge1",
        (10, 10),
        (10, 10),
        S1,
        [Step((10, 10), (0, 0)), Step((10, 10), (1, 1))]
        + [
            s
            for k in range(1, 10)
            for s in (Step((10 - k, 10 - k), (k, k)), Step((10 - k, 10 - k), (k + 1, k + 1)))
        ]
        + [Step((0, 0), (10, 10))],
    ),
    (
        "large_10_10_surge3",
        (10, 10),
        (10, 10),
        surge(3, 3),
        steps(
            ((10, 10), (0, 0)), ((10, 10), (3, 3)), ((8, 8), (3, 3)), ((8, 8), (5, 5)),
            ((5, 5), (8, 8)), ((3, 3), (8, 8)), ((3, 3), (10, 10)), ((0, 0), (10, 10)),
        ),
    ),
    (
        "large_12_6_surge2",
        (12, 6),
        (12, 6),
        surge(2, 2),
        steps(
            ((12, 6), (0, 0)), ((12, 6), (2, 1)), ((10, 5), (2, 1)), ((10, 5), (4, 2)),
            ((8, 4), (4, 2)), ((8, 4), (6, 3)), ((6, 3), (6, 3)), ((6, 3), (8, 4)),
            ((4, 2), (8, 4)), ((4, 2), (10, 5)), ((2, 1), (10, 5)), ((2, 1), (12, 6)),
            ((0, 0), (12, 6)),
        ),
    ),
    (
        "scale_up_1_1_to_3_3",
        (1, 1),
        (3, 3),
        S1,
        steps(
            ((1, 1), (0, 0)), ((1, 1), (1, 1)), ((1, 1), (2, 2)),
            ((1, 1), (3, 3)), ((0, 0), (3, 3)),
        ),
    ),
    (
        "scale_up_4_4_to_6_6",
        (4, 4),
        (6, 6),
        S1,
        steps(
            ((4, 4), (0, 0)), ((4, 4), (1, 1)), ((4, 4), (2, 2)), ((4, 4), (3, 3)),
            ((3, 3), (4, 4)), ((2, 2), (5, 5)), ((1, 1), (6, 6)), ((0, 0), (6, 6)),
        ),
    ),
    (
        "scale_down_5_5_to_2_2",
        (5, 5),
        (2, 2),
        S1,
        steps(
            ((5, 5), (0, 0)), ((4, 4), (0, 0)), ((3, 3), (0, 0)), ((2, 2), (0, 0)),
            ((2, 2), (1, 1)), ((1, 1), (1, 1)), ((1, 1), (2, 2)), ((0, 0), (2, 2)),
        ),
    ),
    (
        "mixed_scale_3_5_to_5_3",
        (3, 5),
        (5, 3),
        S1,
        steps(
            ((3, 5), (0, 0)), ((3, 4), (0, 0)), ((2, 3), (0, 0)), ((2, 3), (1, 1)),
            ((2, 2), (1, 1)), ((2, 2), (2, 2)), ((2, 2), (3, 2)), ((1, 1), (3, 2)),
            ((1, 1), (4, 3)), ((1, 1), (5, 3)), ((0, 0), (5, 3)),
        ),
    ),
    (
        "asymmetric_2_4_to_4_2",
        (2, 4),
        (4, 2),
        S1,
        steps(
            ((2, 4), (0, 0)), ((2, 3), (0, 0)), ((1, 2), (0, 0)), ((1, 2), (1, 1)),
            ((1, 2), (2, 1)), ((1, 1), (2, 1)), ((1, 1), (3, 2)), ((1, 1), (4, 2)),
            ((0, 0), (4, 2)),
        ),
    ),
    (
        "proportional_3_5_to_4_2",
        (3, 5),
        (4, 2),
        S1,
        steps(
            ((3, 5), (0, 0)), ((3, 4), (0, 0)), ((2, 3), (0, 0)), ((2, 2), (0, 0)),
            ((2, 2), (1, 1)), ((2, 2), (2, 1)), ((1, 1), (2, 1)), ((1, 1), (3, 2)),
            ((1, 1), (4, 2)), ((0, 0), (4, 2)),
        ),
    ),
    (
        "medium_4_4_surge2",
        (4, 4),
        (4, 4),
        surge(2, 2),
        steps(
            ((4, 4), (0, 0)), ((4, 4), (2, 2)), ((2, 2), (2, 2)),
            ((2, 2), (4, 4)), ((0, 0), (4, 4)),
        ),
    ),
    (
        "asymmetric_surge_4_6",
        (4, 6),
        (4, 6),
        surge(2, 3),
        steps(
            ((4, 6), (0, 0)), ((4, 6), (2, 3)), ((2, 3), (2, 3)),
            ((2, 3), (4, 6)), ((0, 0), (4, 6)),
        ),
    ),
    (
        "asymmetric_5_3_surge2",
        (5, 3),
        (5, 3),
        surge(2, 2),
        steps(
            ((5, 3), (0, 0)), ((5, 3), (2, 1)), ((4, 2), (2, 1)), ((3, 2), (2, 1)),
            ((3, 2), (4, 2)), ((2, 1), (4, 2)), ((2, 1), (5, 3)), ((0, 0), (5, 3)),
        ),
    ),
    (
        "fresh_deploy_0_0_to_3_3",
        (0, 0),
        (3, 3),
        S1,
        steps(((0, 0), (0, 0)), ((0, 0), (1, 1)), ((0, 0), (2, 2)), ((0, 0), (3, 3))),
    ),
    ("empty_0_0_to_0_0", (0, 0), (0, 0), S1, steps(((0, 0), (0, 0)))),
]  # fmt: skip


@pytest.mark.parametrize(
    ("initial", "target", "budgets", "expected"), [c[1:] for c in EXACT], ids=[c[0] for c in EXACT]
)
def test_exact_sequences(
    initial: tuple[int, ...], target: tuple[int, ...], budgets: list[Budget], expected: list[Step]
) -> None:
    assert all_steps(initial, target, budgets) == expected


def completes(result: list[Step], target: tuple[int, ...]) -> bool:
    last = result[-1]
    return all(o == 0 for o in last.old) and last.new == target


def totals(result: list[Step]) -> list[int]:
    return [sum(s.old) + sum(s.new) for s in result]


def test_unavailable_goes_below_the_target_and_surge_never_does() -> None:
    # TestUnavailableBasic_*, TestSurgePriority_*.
    with_unavailable = all_steps((4, 4), (4, 4), unavailable(1, 1))
    assert completes(with_unavailable, (4, 4)) and min(totals(with_unavailable)) < 8
    assert any(
        sum(a.old) - sum(b.old) > sum(b.new) - sum(a.new) and b.old < a.old
        for a, b in itertools.pairwise(with_unavailable)
    )
    both = all_steps((4, 4), (4, 4), [Budget(1, 1), Budget(1, 1)])
    assert completes(both, (4, 4)) and min(totals(both)) >= 8
    assert min(totals(all_steps((6, 6), (6, 6), surge(2, 2)))) >= 12
    assert min(totals(all_steps((6, 6), (6, 6), unavailable(2, 2)))) < 12
    surge_wins = all_steps((6, 6), (6, 6), [Budget(2, 2), Budget(2, 2)])
    assert completes(surge_wins, (6, 6)) and min(totals(surge_wins)) >= 12


@pytest.mark.parametrize(
    ("initial", "target", "budgets"),
    [
        ((4, 4), (4, 4), [Budget(1, 0), Budget(0, 1)]),
        ((4, 4), (4, 4), [Budget(0, 1), Budget(1, 0)]),
        ((6, 2), (6, 2), [Budget(1, 0), Budget(0, 1)]),
        ((2, 6), (2, 6), [Budget(1, 0), Budget(0, 1)]),
        ((8, 4), (8, 4), [Budget(1, 0), Budget(0, 1)]),
        ((2, 2), (4, 4), unavailable(1, 1)),
        ((4, 4), (2, 2), unavailable(1, 1)),
        ((0, 0), (4, 4), unavailable(1, 1)),
    ],
)
def test_mixed_budgets_complete(
    initial: tuple[int, ...], target: tuple[int, ...], budgets: list[Budget]
) -> None:
    assert completes(all_steps(initial, target, budgets), target)


@pytest.mark.parametrize(("size", "unavail"), [(4, 1), (6, 2), (10, 5)])
def test_no_endless_rollout(size: int, unavail: int) -> None:
    result = all_steps((size, size), (size, size), unavailable(unavail, unavail))
    assert len(result) <= 4 * size and completes(result, (size, size))


@pytest.mark.parametrize(
    ("budget", "expected"),
    [
        (Budget(1, 0), 1),
        (Budget(2, 0), 2),
        (Budget(0, 1), 1),
        (Budget(0, 2), 2),
        (Budget(0, 0), 1),
        (Budget(3, 2), 3),
    ],
)
def test_batch_size(budget: Budget, expected: int) -> None:
    assert batch_size(budget) == expected


@pytest.mark.parametrize(
    ("initial", "target", "budgets", "expected"),
    [
        ((4, 4), (4, 4), S1, 4),
        ((6, 2), (6, 2), S1, 6),
        ((4, 4), (4, 4), surge(2, 2), 2),
        ((0, 0), (3, 3), S1, 3),
    ],
)
def test_total_steps(
    initial: tuple[int, ...], target: tuple[int, ...], budgets: list[Budget], expected: int
) -> None:
    assert total_steps(initial, target, budgets) == expected


def test_more_old_replicas_than_at_the_start_go_back_to_the_baseline() -> None:
    # TestCorrectAbnormalState.
    assert next_step((4, 4), (2, 2), (2, 2), (4, 4), S1) == Step((2, 2), (3, 3))
    assert next_step((4, 4), (5, 5), (2, 2), (4, 4), S1) == Step((4, 4), (2, 2))


@pytest.mark.parametrize(("new", "target"), [((3, 6), (3, 6)), ((4, 7), (3, 6))])
def test_nothing_to_do_once_complete(new: tuple[int, ...], target: tuple[int, ...]) -> None:
    assert next_step((3, 6), (0, 0), new, target, S1) is None


def test_the_first_step_creates_new_replicas_of_every_role() -> None:
    step = next_step((4, 4), (4, 4), (0, 0), (4, 4), S1)
    assert step is not None and all(n > 0 for n in step.new)


def test_next_new_edge_cases() -> None:
    result = _next_new((0, 4), (0, 2), 4)
    assert result[0] == 0 and result[1] > 2
    result = _next_new((4, 0), (2, 0), 4)
    assert result[0] > 2 and result[1] == 0
    assert _next_new((4, 4), (2, 2), 0) == (4, 4)


def test_next_old_edge_cases() -> None:
    result = _next_old((0, 4), (0, 3), 4)
    assert result[0] == 0 and result[1] <= 3
    result = _next_old((4, 0), (3, 0), 4)
    assert result[0] <= 3 and result[1] == 0
    assert _next_old((4, 4), (2, 2), 0) == (0, 0)


N_ROLE = [
    ("3role_symmetric", (3, 3, 3), (3, 3, 3), (1, 1, 1), (0, 0, 0)),
    ("3role_asymmetric", (6, 3, 2), (6, 3, 2), (2, 1, 1), (0, 0, 0)),
    ("3role_different_surge", (4, 4, 4), (4, 4, 4), (2, 1, 3), (0, 0, 0)),
    ("3role_scale_up", (2, 2, 2), (4, 4, 4), (1, 1, 1), (0, 0, 0)),
    ("3role_scale_down", (4, 4, 4), (2, 2, 2), (1, 1, 1), (0, 0, 0)),
    ("3role_fresh_deploy", (0, 0, 0), (3, 3, 3), (1, 1, 1), (0, 0, 0)),
    ("3role_unavailable", (4, 4, 4), (4, 4, 4), (0, 0, 0), (1, 1, 1)),
    ("3role_mixed_surge_unavail", (4, 4, 4), (4, 4, 4), (1, 0, 2), (0, 1, 0)),
    ("4role_symmetric", (4, 4, 4, 4), (4, 4, 4, 4), (1, 1, 1, 1), (0, 0, 0, 0)),
    ("4role_asymmetric", (8, 4, 2, 1), (8, 4, 2, 1), (2, 2, 1, 1), (0, 0, 0, 0)),
    ("4role_scale_up", (1, 1, 1, 1), (3, 3, 3, 3), (1, 1, 1, 1), (0, 0, 0, 0)),
    ("4role_scale_down", (5, 5, 5, 5), (2, 2, 2, 2), (1, 1, 1, 1), (0, 0, 0, 0)),
    ("4role_fresh_deploy", (0, 0, 0, 0), (4, 4, 4, 4), (1, 1, 1, 1), (0, 0, 0, 0)),
    ("5role_symmetric", (5,) * 5, (5,) * 5, (1,) * 5, (0,) * 5),
    ("5role_asymmetric", (10, 5, 3, 2, 1), (10, 5, 3, 2, 1), (2, 2, 1, 1, 1), (0,) * 5),
    ("5role_scale_up", (1,) * 5, (2,) * 5, (1,) * 5, (0,) * 5),
    ("5role_scale_down", (6,) * 5, (3,) * 5, (1,) * 5, (0,) * 5),
    ("5role_fresh_deploy", (0,) * 5, (5,) * 5, (1,) * 5, (0,) * 5),
    ("add_role_2to3", (4, 4, 0), (4, 4, 4), (1, 1, 1), (0, 0, 0)),
    ("add_role_3to4", (3, 3, 3, 0), (3, 3, 3, 3), (1,) * 4, (0,) * 4),
    ("add_role_5to6", (2, 2, 2, 2, 2, 0), (2,) * 6, (1,) * 6, (0,) * 6),
    ("remove_role_3to2", (4, 4, 4), (4, 4, 0), (1, 1, 1), (0, 0, 0)),
    ("remove_role_4to3", (3, 3, 3, 3), (3, 3, 3, 0), (1,) * 4, (0,) * 4),
    ("rename_role_5to5", (10, 10, 10, 10, 0, 10), (10, 10, 10, 10, 10, 0), (1,) * 6, (0,) * 6),
    ("scale_down_prefill_up_decode", (10, 2), (6, 8), (2, 2), (0, 0)),
    ("scale_down_both", (10, 10), (4, 4), (2, 2), (0, 0)),
    ("scale_down_asymmetric", (8, 4), (3, 2), (1, 1), (0, 0)),
    ("unavail_asymmetric_5_2", (5, 2), (5, 2), (0, 0), (1, 1)),
]


@pytest.mark.parametrize(
    ("initial", "target", "surges", "unavails"), [c[1:] for c in N_ROLE], ids=[c[0] for c in N_ROLE]
)
def test_n_roles_complete(
    initial: tuple[int, ...],
    target: tuple[int, ...],
    surges: tuple[int, ...],
    unavails: tuple[int, ...],
) -> None:
    budgets = [Budget(s, u) for s, u in zip(surges, unavails, strict=True)]
    assert completes(all_steps(initial, target, budgets), target)


@pytest.mark.parametrize(
    ("initial", "target", "surges"),
    [
        ((3, 3, 3), (3, 3, 3), (1, 1, 1)),
        ((4, 4, 4, 4), (4, 4, 4, 4), (1, 1, 1, 1)),
        ((5,) * 5, (5,) * 5, (1,) * 5),
        ((10, 2), (6, 8), (2, 2)),
        ((10, 10), (4, 4), (2, 2)),
        ((8, 4), (3, 2), (1, 1)),
    ],
)
def test_n_roles_keep_the_surge_budget(
    initial: tuple[int, ...], target: tuple[int, ...], surges: tuple[int, ...]
) -> None:
    """TestNRole_SurgeConstraint: old + new <= target + maxSurge once a role scales up."""
    for step in all_steps(initial, target, [Budget(s, 0) for s in surges]):
        for r, extra in enumerate(surges):
            if step.new[r] > 0:
                assert step.old[r] + step.new[r] <= target[r] + extra, step


@pytest.mark.parametrize(
    ("initial", "unavails"),
    [((4, 4), (1, 1)), ((5, 2), (1, 1)), ((2, 5), (1, 1)), ((3, 3, 3), (1, 1, 1))],
)
def test_n_roles_keep_the_unavailability_budget(
    initial: tuple[int, ...], unavails: tuple[int, ...]
) -> None:
    """TestNRole_UnavailableConstraint: old + new >= target - maxUnavailable."""
    result = all_steps(initial, initial, [Budget(0, u) for u in unavails])
    assert completes(result, initial)
    for step in result:
        for r, u in enumerate(unavails):
            assert step.old[r] + step.new[r] >= initial[r] - u, step


# --- spreading a step's drain over the old revisions (executor.go scaleDownOld) --------------

ROLES = ["prefill", "decode"]


def revision(name: str, prefill: int, decode: int) -> OldRevision:
    return OldRevision(name, {"prefill": prefill, "decode": decode})


@pytest.mark.parametrize(
    ("revisions", "budget", "expected"),
    [
        # single workload scales down
        ([revision("h1", 4, 4)], (2, 2), {"h1": (2, 2)}),
        # multiple workloads drain newest first (newest listed first)
        (
            [revision("newer", 2, 2), revision("oldest", 2, 2)],
            (2, 2),
            {"newer": (0, 0), "oldest": (2, 2)},
        ),
        # coordinated drain when one role reaches zero
        ([revision("h1", 3, 2)], (1, 2), {"h1": (0, 0)}),
        # budget exhaustion stops mid-workload
        ([revision("h1", 6, 6)], (2, 2), {"h1": (4, 4)}),
        # three workloads drain newest then middle
        (
            [revision("newest", 2, 2), revision("middle", 2, 2), revision("oldest", 2, 2)],
            (4, 4),
            {"newest": (0, 0), "middle": (0, 0), "oldest": (2, 2)},
        ),
        # partial drain of newest without coordinated trigger
        (
            [revision("hashB", 3, 3), revision("hashA", 1, 2)],
            (1, 1),
            {"hashB": (2, 2), "hashA": (1, 2)},
        ),
        # drains newest without spilling to older
        (
            [revision("newer", 3, 3), revision("oldest", 1, 1)],
            (2, 2),
            {"newer": (1, 1), "oldest": (1, 1)},
        ),
    ],
)
def test_spread_drain(
    revisions: list[OldRevision], budget: tuple[int, int], expected: dict[str, tuple[int, int]]
) -> None:
    current = tuple(sum(r.replicas[role] for r in revisions) for role in ROLES)
    target = tuple(c - b for c, b in zip(current, budget, strict=True))
    out = spread_drain(revisions, ROLES, current, target)
    after = {
        r.revision: tuple(out.get((r.revision, role), r.replicas[role]) for role in ROLES)
        for r in revisions
    }
    assert after == expected


@pytest.mark.parametrize(
    ("budget", "expected"),
    [
        ((0, 1, 0), (4, 3)),  # a role the old revision lacks triggers no coordinated drain
        ((1, 1, 0), (3, 3)),
        ((4, 0, 0), (0, 0)),  # prefill reaches 0: decode goes with it
    ],
)
def test_spread_drain_with_a_role_the_old_revision_lacks(
    budget: tuple[int, int, int], expected: tuple[int, int]
) -> None:
    roles = ["prefill", "decode", "encode"]
    old = [revision("old", 4, 4)]
    current = (4, 4, 0)
    target = tuple(c - b for c, b in zip(current, budget, strict=True))
    out = spread_drain(old, roles, current, target)
    assert (out.get(("old", "prefill"), 4), out.get(("old", "decode"), 4)) == expected


# --- each role's budgets (extractRollingUpdateConfig) -----------------------------------------


@pytest.mark.parametrize(
    ("surge_value", "unavail_value", "replicas", "expected"),
    [
        (None, None, 4, Budget(1, 0)),  # no rollingUpdateConfiguration
        (0, 1, 4, Budget(0, 1)),  # the CRD's defaults when one is given
        (2, 0, 4, Budget(2, 0)),
        (0, 0, 4, Budget(1, 0)),  # both 0: the default
        ("50%", 0, 4, Budget(2, 0)),
        (0, "25%", 4, Budget(0, 1)),
        ("30%", "30%", 4, Budget(2, 1)),  # surge rounds up, unavailable down
        ("100%", 0, 4, Budget(4, 0)),
        ("50%", "50%", 0, Budget(1, 0)),  # an External role at 0: percentages collapse to 0
    ],
)
def test_role_budget(
    surge_value: int | str | None, unavail_value: int | str | None, replicas: int, expected: Budget
) -> None:
    assert role_budget(surge_value, unavail_value, replicas) == expected


# --- properties -------------------------------------------------------------------------------

budgets = st.builds(Budget, st.integers(0, 3), st.integers(0, 3)).map(
    lambda b: b if b.max_surge or b.max_unavailable else DEFAULT
)


@st.composite
def rollouts(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...], list[Budget]]:
    n = draw(st.integers(2, 5))
    replicas = st.integers(0, 12)
    initial = tuple(draw(replicas) for _ in range(n))
    target = tuple(draw(replicas) for _ in range(n))
    return initial, target, [draw(budgets) for _ in range(n)]


def _step_range(new: int, target: int, total: int) -> tuple[int, int]:
    """The step indices k whose planned count ceil(k * target / total) is ``new``."""
    ks = [k for k in range(total + 1) if min(math.ceil(k * target / total), target) == new]
    assert ks, (new, target, total)
    return min(ks), max(ks)


@settings(max_examples=400, deadline=None)
@given(rollouts())
def test_every_rollout_completes_and_keeps_its_budgets(
    case: tuple[tuple[int, ...], tuple[int, ...], list[Budget]],
) -> None:
    initial, target, budget = case
    result = all_steps(initial, target, budget)
    assert len(result) <= 2 * max((*initial, *target, 0)) + 11
    assert completes(result, target) or (
        all(o == 0 for o in result[-1].old)
        and all(n >= t for n, t in zip(result[-1].new, target, strict=True))
    )
    total = total_steps(initial, target, budget)
    for before, after in itertools.pairwise(result):
        assert all(b <= a for b, a in zip(before.new, after.new, strict=True)), "new went down"
        assert all(b >= a for b, a in zip(before.old, after.old, strict=True)), "old went up"
    for step in result:
        live = [o for o, i in zip(step.old, initial, strict=True) if i > 0]
        assert all(o == 0 for o in live) or all(o > 0 for o in live), f"orphaned role: {step}"
        for r, b in enumerate(budget):
            running = step.old[r] + step.new[r]
            # at most one replica more than the surge budget: the one orphan prevention keeps
            assert running <= max(initial[r], target[r]) + b.max_surge + 1, (r, step)
            if initial[r] >= target[r]:
                assert running >= target[r] - b.max_unavailable, (r, step)
        if total:
            ranges = [_step_range(step.new[r], t, total) for r, t in enumerate(target) if t > 0]
            if ranges:  # the ratio between roles holds within one step
                assert max(lo for lo, _ in ranges) <= min(hi for _, hi in ranges) + 1, step
