"""Rolling-update arithmetic (upstream's rollingUpdateParameters and the leader StatefulSet's
maxUnavailable, pkg/controllers/leaderworkerset_controller.go): the case list, the worked
examples of upstream's test/integration/controllers/leaderworkerset_test.go, and properties
checked against a small model of the StatefulSet controller."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from lws_operator.api.intstr import scaled_value
from lws_operator.plan.lws.rollout import (
    RolloutInput,
    RolloutPlan,
    State,
    plan_rollout,
    sts_max_unavailable,
)

# (ready, updated) of one group index.
DONE = (True, True)
OLD = (True, False)  # an available group on the previous revision
DOWN = (False, False)  # missing, or old and unready
STARTING = (False, True)


def plan(
    states: list[State] | None = None,
    *,
    replicas: int = 4,
    partition: int = 0,
    max_unavailable: int | str = 1,
    max_surge: int | str = 0,
    sts_exists: bool = True,
    sts_replicas: int | None = None,
    sts_partition: int = 0,
    replicas_annotation: int | None = -1,
    revision_changed: bool = False,
) -> tuple[int, int]:
    states = states or []
    plan = plan_rollout(
        RolloutInput(
            replicas=replicas,
            partition=partition,
            max_unavailable=max_unavailable,
            max_surge=max_surge,
            sts_exists=sts_exists,
            sts_replicas=len(states) if sts_replicas is None else sts_replicas,
            sts_partition=sts_partition,
            replicas_annotation=replicas if replicas_annotation == -1 else replicas_annotation,
            revision_changed=revision_changed,
            states=states,
        )
    )
    return plan.replicas, plan.partition


# --- IntOrString scaling ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "total", "round_up", "expected"),
    [
        (3, 10, False, 3),
        (3, 10, True, 3),
        (12, 4, True, 12),  # ints are not capped here
        ("25%", 4, False, 1),
        ("25%", 5, False, 1),
        ("25%", 5, True, 2),
        ("25%", 2, False, 0),
        ("25%", 2, True, 1),
        ("100%", 7, False, 7),
        ("0%", 7, True, 0),
        ("50%", 0, True, 0),
        ("150%", 2, True, 3),  # the webhook rejects > 100%; scaling itself does not
    ],
)
def test_scaled_value(value: int | str, total: int, round_up: bool, expected: int) -> None:
    assert scaled_value(value, total, round_up=round_up) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("25", "a string must be a percentage like '25%'"),
        ("x%", "a string must be a percentage"),
        ("-5%", "a string must be a percentage"),
        ("25%\n", "a string must be a percentage"),
        ("", "a string must be a percentage"),
        (-1, "must be >= 0"),
        (True, "expected an integer or a percentage"),
        (1.5, "expected an integer or a percentage"),
    ],
)
def test_scaled_value_rejects_bad_values(value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        scaled_value(value, 4, round_up=False)  # type: ignore[arg-type]


def test_bad_int_or_string_in_input_raises() -> None:
    with pytest.raises(ValueError, match="percentage"):
        plan([OLD] * 4, max_surge="two")


@pytest.mark.parametrize(
    ("replicas", "max_unavailable", "max_surge", "expected"),
    [
        (4, 1, 0, 1),
        (4, 2, 2, 4),
        (4, 0, 0, 1),  # at least 1
        (2, 1, 4, 3),  # surge capped at replicas
        (4, "25%", "25%", 2),
        (3, "50%", "50%", 3),  # 1 (down) + 2 (up)
        (0, 1, 1, 1),
    ],
)
def test_sts_max_unavailable(
    replicas: int, max_unavailable: int | str, max_surge: int | str, expected: int
) -> None:
    assert sts_max_unavailable(replicas, max_unavailable, max_surge) == expected
    result = plan_rollout(
        RolloutInput(replicas, 0, max_unavailable, max_surge, False, 0, 0, None, False, [])
    )
    assert result == RolloutPlan(partition=0, replicas=replicas, sts_max_unavailable=expected)


# --- The cases of upstream's rollingUpdateParameters, in order -----------------------------


def test_case1_no_sts_creates_r_groups_at_partition_p() -> None:
    assert plan(sts_exists=False, replicas=3) == (3, 0)
    assert plan(sts_exists=False, replicas=3, partition=2) == (3, 2)


def test_case1_never_surges_even_if_caller_reports_a_new_revision() -> None:
    # lws#614: a brand-new LWS with maxSurge gets R groups, never R + maxSurge.
    assert plan(sts_exists=False, replicas=6, max_surge=3, revision_changed=True) == (6, 0)


def test_case2_new_revision_bursts_and_restarts_the_partition_from_the_top() -> None:
    assert plan([DONE] * 4, max_surge=2, revision_changed=True) == (6, 4)
    assert plan([DONE] * 4, max_surge=0, revision_changed=True) == (4, 4)
    # Mid-rollout with surge groups (S > R): from S, not upstream's min(R, S) = 4.
    assert plan([OLD] * 4 + [DONE] * 2, max_surge=2, revision_changed=True) == (6, 6)


def test_case2_scale_up_with_new_revision_scales_first() -> None:
    assert plan([DONE] * 2, replicas=4, max_surge=2, revision_changed=True) == (4, 2)


def test_case2_partition_is_raised_to_p() -> None:
    assert plan([DONE] * 4, partition=6, revision_changed=True) == (4, 6)


def test_case3_at_rest() -> None:
    assert plan([DONE] * 4, sts_partition=0) == (4, 0)
    assert plan([DONE] * 4, sts_partition=0, partition=2) == (4, 2)  # P raised at rest


def test_case3_at_rest_with_partition_ignores_unready_groups() -> None:
    # Fix (root cause of lws#614): upstream only treats partition == 0 as "at rest", so with
    # P > 0 a freshly created LWS (all groups unready) bursts to R + maxSurge on the 2nd pass.
    fresh = [STARTING] * 6
    assert plan(
        fresh, replicas=6, partition=9, max_unavailable=2, max_surge=3, sts_partition=9
    ) == (
        6,
        9,
    )
    crashed = [DONE, DOWN, DOWN, DONE]
    assert plan(crashed, partition=2, max_surge=1, sts_partition=2) == (4, 2)


def test_case4_scale_up_first_keeps_partition() -> None:
    assert plan([OLD, OLD, DONE, DONE], replicas=6, sts_partition=2) == (6, 2)


def test_case5_replicas_changed_mid_rollout_clamps_partition_to_burst() -> None:
    # R 6 -> 3 at partition 5: clamp to burst (3), want(3 unready) = burst.
    states = [OLD] * 5 + [DONE]
    assert plan(states, replicas=3, sts_partition=5, replicas_annotation=6) == (3, 3)


def test_case5_missing_annotation_is_treated_as_changed() -> None:
    states = [OLD, OLD, OLD, DONE]
    assert plan(states, sts_partition=3, replicas_annotation=None) == (4, 3)
    assert plan(states, sts_partition=3) == (4, 2)  # with the annotation: progress


def test_case6_rolling_step() -> None:
    assert plan([OLD] * 4, sts_partition=4) == (4, 3)
    assert plan([OLD] * 4, sts_partition=4, max_unavailable=2) == (4, 2)


def test_case6_old_unready_groups_below_the_step_use_up_the_budget() -> None:
    assert plan([OLD, DOWN, OLD, OLD], sts_partition=4, max_unavailable=2) == (4, 3)


def test_case6_walks_down_over_unready_and_updated_groups() -> None:
    # Step partition 2; group 0 lifts it to 3; groups 3 and 2 cost nothing: back to 2.
    assert plan([DOWN, OLD, STARTING, DOWN], max_unavailable=2, sts_partition=4) == (4, 2)
    assert plan([DOWN, OLD, DONE, STARTING], max_unavailable=2, sts_partition=4) == (4, 2)
    # Never below the step partition, even when everything is unready.
    assert plan([DOWN] * 4, sts_partition=4) == (4, 3)


def test_case6_partition_never_goes_up() -> None:
    assert plan([OLD, OLD, DOWN, STARTING], sts_partition=2) == (4, 2)


def test_case6_both_budgets_zero_still_progresses() -> None:
    # Fix: maxUnavailable 50% of 1 = 0 with maxSurge 0 (possible after a /scale change):
    # upstream's rolling step is 0 and the rollout never moves; we allow one group.
    assert plan([OLD], replicas=1, max_unavailable="50%", sts_partition=1) == (1, 0)


def test_sts_edited_above_burst_is_brought_back() -> None:
    assert plan([OLD] * 8, sts_partition=8, replicas=2) == (2, 1)


def test_states_must_match_sts_replicas() -> None:
    with pytest.raises(ValueError, match="states has 3 entries"):
        plan([OLD] * 3, sts_replicas=4)
    with pytest.raises(ValueError, match="states has 1 entries"):
        plan([OLD], sts_exists=False)


# --- Worked examples (test/integration/controllers/leaderworkerset_test.go) ----------------


class Harness:
    """Upstream's integration harness: no StatefulSet controller. Groups stay as the test left
    them (an old group stays ready and old), and every controller pass is repeated until the
    leader sts stops changing, as `Eventually` does."""

    def __init__(
        self, replicas: int, *, max_unavailable: int | str = 1, max_surge: int | str = 0
    ) -> None:
        self.replicas, self.partition = replicas, 0
        self.max_unavailable, self.max_surge = max_unavailable, max_surge
        self.sts: tuple[int, int] | None = None
        self.annotation: int | None = None
        self.groups: dict[int, State] = {}
        self.first_pass: tuple[int, int] | None = None  # the sts after the first pass

    @classmethod
    def ready(cls, replicas: int, *, partition: int = 0, **budget: int | str) -> Harness:
        """An LWS created and made Available (SetSuperPodToReady)."""
        harness = cls(replicas, **budget)
        harness.partition = partition
        harness.settle()
        harness.mark_ready(*range(replicas))
        return harness

    def reconcile(self, *, revision_changed: bool = False) -> None:
        """One pass of the LWS controller."""
        s = self.sts[0] if self.sts else 0
        result = plan_rollout(
            RolloutInput(
                replicas=self.replicas,
                partition=self.partition,
                max_unavailable=self.max_unavailable,
                max_surge=self.max_surge,
                sts_exists=self.sts is not None,
                sts_replicas=s,
                sts_partition=self.sts[1] if self.sts else 0,
                replicas_annotation=self.annotation,
                revision_changed=revision_changed,
                states=[self.groups.get(i, DOWN) for i in range(s)],
            )
        )
        self.sts, self.annotation = (result.replicas, result.partition), self.replicas

    def settle(self, *, revision_changed: bool = False) -> tuple[int, int]:
        """(sts replicas, sts partition) once the controller has nothing more to do."""
        self.reconcile(revision_changed=revision_changed)
        self.first_pass = self.sts
        for _ in range(50):
            before = self.sts
            self.reconcile()
            if self.sts == before:
                assert self.sts is not None
                return self.sts
        raise AssertionError("the controller never settled")

    def update_template(self) -> tuple[int, int]:
        self.groups = {i: (ready, False) for i, (ready, _) in self.groups.items()}
        return self.settle(revision_changed=True)

    def scale(self, replicas: int, *, update_template: bool = False) -> tuple[int, int]:
        self.replicas = replicas
        return self.update_template() if update_template else self.settle()

    def set_partition(self, partition: int) -> tuple[int, int]:
        self.partition = partition
        return self.settle()

    def mark_ready(self, *indices: int) -> tuple[int, int]:
        """SetPodGroupToReady: the group runs the current template and is ready."""
        for i in indices:
            self.groups[i] = DONE
        return self.settle()

    def mark_unready(self, *indices: int) -> tuple[int, int]:
        for i in indices:
            self.groups[i] = (False, self.groups[i][1])
        return self.settle()

    def delete(self, *indices: int) -> tuple[int, int]:
        for i in indices:
            self.groups.pop(i, None)
        return self.settle()


def test_example_u1_m0_out_of_order_and_unready() -> None:  # :631-728
    h = Harness.ready(4)
    assert h.sts == (4, 0)
    assert h.update_template() == (4, 3)
    assert h.mark_ready(3) == (4, 2)
    assert h.mark_ready(1) == (4, 2)  # out of order: no effect
    assert h.mark_unready(3) == (4, 2)  # the partition does not go back up
    assert h.mark_ready(0, 1, 2, 3) == (4, 0)


def test_example_u2() -> None:  # :729-806
    h = Harness.ready(4, max_unavailable=2)
    assert h.update_template() == (4, 2)
    assert h.mark_ready(3) == (4, 1)
    assert h.mark_ready(2) == (4, 0)
    assert h.mark_ready(1, 0) == (4, 0)


def test_example_u_greater_than_replicas() -> None:  # :807-855
    h = Harness.ready(4, max_unavailable=10)
    assert h.update_template() == (4, 0)
    assert h.mark_ready(0, 1, 2, 3) == (4, 0)


def test_example_scale_up_with_template_change() -> None:  # :856-915
    h = Harness.ready(4)
    assert h.scale(6, update_template=True) == (6, 4)  # new indices 4, 5 start on the new one
    assert h.mark_ready(*range(6)) == (6, 0)


def test_example_scale_up_mid_rollout() -> None:  # :916-1007
    h = Harness.ready(4)
    assert h.update_template() == (4, 3)
    assert h.mark_ready(3) == (4, 2)
    assert h.scale(6) == (6, 2)


def test_example_scale_down_mid_rollout() -> None:  # :1008-1087
    h = Harness.ready(6)
    assert h.update_template() == (6, 5)
    assert h.scale(3) == (3, 2)


def test_example_u0_m1() -> None:  # :1088-1206
    h = Harness.ready(4, max_unavailable=0, max_surge=1)
    assert h.update_template() == (5, 4)
    assert h.mark_ready(4) == (5, 3)
    assert h.mark_ready(3) == (5, 2)
    assert h.mark_ready(2) == (5, 1)
    assert h.mark_ready(1) == (5, 0)  # still surged
    assert h.mark_ready(0) == (4, 0)


def test_example_u1_m1() -> None:  # :1207-1325
    h = Harness.ready(4, max_unavailable=1, max_surge=1)
    assert h.update_template() == (5, 3)
    assert h.mark_ready(4) == (5, 2)
    assert h.mark_ready(3) == (5, 1)
    assert h.mark_ready(2) == (5, 0)
    assert h.mark_ready(1) == (4, 0)  # surge given back
    assert h.mark_ready(0) == (4, 0)


def test_example_u2_m2() -> None:  # :1326-1403
    h = Harness.ready(4, max_unavailable=2, max_surge=2)
    assert h.update_template() == (6, 2)
    assert h.mark_ready(3, 2) == (4, 0)


def test_example_scale_up_with_template_change_and_surge() -> None:  # :1404-1472
    h = Harness.ready(2, max_surge=2)
    assert h.scale(4, update_template=True) == (6, 2)
    assert h.mark_ready(*range(6)) == (4, 0)


def test_example_scale_down_with_template_change_and_surge() -> None:  # :1473-1538
    h = Harness.ready(6, max_surge=2)
    assert h.scale(3, update_template=True) == (5, 2)
    h.groups.pop(5)
    assert h.mark_ready(*range(5)) == (3, 0)


def test_example_surge_capped_at_replicas() -> None:  # :1539-1608
    h = Harness.ready(2, max_surge=4)
    assert h.update_template() == (3, 1)
    assert h.mark_ready(0, 1, 2) == (2, 0)


def test_example_scale_up_then_down_mid_rollout_with_surge() -> None:  # :1609-1765
    h = Harness.ready(4, max_surge=2)
    assert h.update_template() == (6, 3)
    assert h.scale(6) == (8, 3)
    assert h.mark_ready(7, 6) == (8, 3)
    h.replicas = 2  # scale down and delete leaders 4-7 and 3 before the controller runs
    assert h.delete(4, 5, 6, 7, 3) == (3, 1)
    assert h.mark_ready(2) == (3, 0)
    h.groups.pop(2)
    assert h.mark_ready(1) == (2, 0)
    assert h.mark_ready(0) == (2, 0)


def test_example_second_template_change_mid_rollout() -> None:  # :1766-1877
    h = Harness.ready(4, max_surge=2)
    assert h.update_template() == (6, 3)
    assert h.mark_ready(5, 4) == (6, 1)
    assert h.update_template() == (6, 3)
    # Upstream jumps back to min(R, S) = 4 first; we restart from S (see the fix below).
    assert h.first_pass == (6, 6)
    assert h.mark_ready(*range(6)) == (4, 0)


def test_example_all_unready_before_update() -> None:  # :2281-2358
    h = Harness.ready(2)
    h.mark_unready(0, 1)
    assert h.update_template() == (2, 1)
    assert h.mark_ready(1) == (2, 0)
    assert h.mark_ready(0) == (2, 0)


def test_example_unready_group_below_the_step() -> None:  # :2214-2280
    h = Harness.ready(4, max_unavailable=2)
    h.mark_unready(1)
    assert h.update_template() == (4, 3)  # not 2: group 1 already uses the budget


def test_example_partition() -> None:  # :2394-2489
    h = Harness.ready(6, partition=4)
    assert h.sts == (6, 4)
    assert h.update_template() == (6, 5)
    assert h.mark_ready(5) == (6, 4)
    assert h.mark_ready(4) == (6, 4)  # groups 4-5 updated: Available
    assert h.set_partition(2) == (6, 3)
    assert h.mark_ready(3) == (6, 2)
    assert h.mark_ready(2) == (6, 2)


def test_example_partition_and_surge() -> None:  # :2490-2581
    h = Harness.ready(3, partition=2, max_surge=1)
    assert h.sts == (3, 2)
    assert h.update_template() == (4, 2)
    assert h.mark_ready(3, 2) == (4, 2)  # Available; the surge group is kept while P > 0
    assert h.set_partition(0) == (4, 0)
    assert h.mark_ready(1, 0) == (3, 0)


# --- Properties, against a model of the StatefulSet controller ------------------------------


@dataclass
class Group:
    revision: int
    ready: bool = False


@dataclass
class Cluster:
    """The LWS controller's rollout planning, plus a StatefulSet controller that honours
    replicas (highest indices removed first), partition and, unless ``adversarial``, its own
    maxUnavailable. Groups become ready only when the test says so. ``adversarial`` models
    leaders that report Ready before their workers: the StatefulSet controller then replaces
    every outdated group at or above the partition at once, and only the partition protects
    availability."""

    replicas: int
    partition: int
    max_unavailable: int | str
    max_surge: int | str
    adversarial: bool = False
    revision: int = 1
    sts: bool = False
    sts_replicas: int = 0
    sts_partition: int = 0
    sts_budget: int = 1
    annotation: int | None = None
    sts_revision: int = 0  # the template revision the sts was last applied with
    old_revision: int = 0  # what the sts creates below its partition
    applied_floor: int = 0  # P when the sts was last applied
    groups: dict[int, Group] = field(default_factory=dict)
    plans: list[tuple[RolloutInput, RolloutPlan]] = field(default_factory=list)

    @property
    def burst(self) -> int:
        return self.replicas + min(
            scaled_value(self.max_surge, self.replicas, round_up=True), self.replicas
        )

    @property
    def budget(self) -> int:
        """maxUnavailable as the rollout uses it (with the 0/0 fencepost)."""
        u = scaled_value(self.max_unavailable, self.replicas, round_up=False)
        return 1 if u == 0 and self.burst == self.replicas and self.replicas > 0 else u

    def snapshot(self) -> tuple[int, int, dict[int, tuple[int, bool]]]:
        groups = {i: (g.revision, g.ready) for i, g in self.groups.items()}
        return self.sts_replicas, self.sts_partition, groups

    def available(self) -> int:
        return sum(g.ready for g in self.groups.values())

    def reconcile(self) -> RolloutPlan:
        revision_changed = self.sts and self.sts_revision != self.revision
        states = [
            (g.ready, g.revision == self.revision) if (g := self.groups.get(i)) else DOWN
            for i in range(self.sts_replicas if self.sts else 0)
        ]
        inp = RolloutInput(
            self.replicas,
            self.partition,
            self.max_unavailable,
            self.max_surge,
            self.sts,
            self.sts_replicas if self.sts else 0,
            self.sts_partition if self.sts else 0,
            self.annotation,
            revision_changed,
            states,
        )
        result = plan_rollout(inp)
        self.plans.append((inp, result))
        # Invariants of every single plan.
        assert result.replicas <= self.burst, "never more than R + maxSurge groups"
        assert result.partition >= self.partition, "groups below P are never updated"
        if self.sts and not revision_changed:
            assert result.partition <= max(self.sts_partition, self.partition), (
                "within one rollout the partition only goes down (or up to a raised P)"
            )
        if not self.sts:
            self.old_revision = self.revision
        self.sts = True
        self.sts_replicas, self.sts_partition = result.replicas, result.partition
        self.sts_budget, self.annotation = result.sts_max_unavailable, self.replicas
        self.sts_revision, self.applied_floor = self.revision, self.partition
        return result

    def sync(self) -> None:
        """One pass of the StatefulSet controller."""
        if not self.sts:
            return
        for i in [i for i in self.groups if i >= self.sts_replicas]:
            del self.groups[i]
        for i in range(self.sts_replicas):
            if i not in self.groups:
                below = i < self.sts_partition
                self.groups[i] = Group(self.old_revision if below else self.sts_revision)
        outdated = [
            i
            for i in range(self.sts_replicas - 1, self.sts_partition - 1, -1)
            if self.groups[i].revision != self.sts_revision
        ]
        if not self.adversarial:
            unavailable = sum(not self.groups[i].ready for i in range(self.sts_replicas))
            outdated = outdated[: max(0, self.sts_budget - unavailable)]
        for i in outdated:
            assert i >= self.applied_floor, "groups below P are never updated"
            self.groups[i] = Group(self.sts_revision)
        if all(g.revision == self.sts_revision for g in self.groups.values()):
            self.old_revision = self.sts_revision

    def step(self) -> None:
        self.reconcile()
        self.sync()

    def become_ready(self, i: int | None) -> None:
        """Group i (or the highest unready one) becomes ready."""
        unready = sorted(i for i, g in self.groups.items() if not g.ready)
        if unready:
            self.groups[unready[-1] if i is None else unready[i % len(unready)]].ready = True

    def settle(self) -> None:
        """Stop changing the spec and let every group become ready: the rollout must end."""
        for _ in range(4 * self.burst + 8):
            self.step()
            for g in self.groups.values():
                g.ready = True
        before = self.snapshot()
        self.step()
        assert self.snapshot() == before, "a fixed point"
        p = max(0, self.partition)
        assert self.sts_partition == p, "the partition reaches P"
        s = self.sts_replicas
        assert all(self.groups[i].revision == self.revision for i in range(p, s)), (
            "every group at or above P is updated"
        )
        assert self.replicas <= s <= self.burst
        if p == 0:
            assert s == self.replicas, "surge is given back once the rollout completes"


def new_cluster(
    replicas: int, partition: int, u: int | str, m: int | str, *, adversarial: bool = False
) -> Cluster:
    """A created LWS with every group ready, before any template change."""
    cluster = Cluster(replicas, partition, u, m, adversarial=adversarial)
    for _ in range(2):  # the groups are still starting on the second pass
        cluster.step()
        assert cluster.sts_replicas == replicas, "lws#614: no surge on creation"
    for g in cluster.groups.values():
        g.ready = True
    cluster.step()
    assert cluster.sts_replicas == replicas
    return cluster


budgets = st.one_of(st.integers(0, 3), st.sampled_from(["0%", "25%", "50%", "100%"]))
progress = st.one_of(
    st.just(("step",)),
    st.just(("reconcile",)),
    st.just(("sync",)),
    st.tuples(st.just("ready"), st.none() | st.integers(0, 7)),
)
spec_change = st.one_of(
    st.just(("template",)),
    st.tuples(st.just("scale"), st.integers(0, 6)),
    st.tuples(st.just("partition"), st.integers(0, 7)),
    st.tuples(st.just("fail"), st.integers(0, 7)),
)


def apply(cluster: Cluster, action: tuple[object, ...]) -> None:
    match action:
        case ("step",):
            cluster.step()
        case ("reconcile",):
            cluster.reconcile()
        case ("sync",):
            cluster.sync()
        case ("ready", None | int() as i):
            cluster.become_ready(i)
        case ("template",):
            cluster.revision += 1
        case ("scale", int(replicas)):
            cluster.replicas = replicas
        case ("partition", int(partition)):
            cluster.partition = partition
        case ("fail", int(i)) if i in cluster.groups:
            cluster.groups[i].ready = False
        case ("fail", _):
            pass
        case _:
            raise AssertionError(f"unknown action {action}")


@settings(max_examples=1500, deadline=None)
@given(
    replicas=st.integers(1, 6),
    partition=st.integers(0, 3),
    u=budgets,
    m=budgets,
    adversarial=st.booleans(),
    actions=st.lists(
        st.one_of(
            progress,
            st.just(("template",)),
            st.tuples(st.just("partition"), st.integers(0, 7)),
            st.tuples(st.just("fail"), st.integers(0, 7)),
        ),
        max_size=50,
    ),
)
# Counter-examples to upstream's arithmetic, found by this test.
@example(  # an unready group shifted below the partition went uncounted
    replicas=6,
    partition=0,
    u=2,
    m=0,
    adversarial=True,
    actions=[("step",), ("fail", 0), ("step",), ("ready", None), ("fail", 3), ("step",)],
)
@example(  # a new revision mid-rollout replaced the ready surge group at once
    replicas=2,
    partition=0,
    u=1,
    m=2,
    adversarial=False,
    actions=[("step",), ("ready", None), ("step",), ("template",), ("step",)],
)
def test_rollout_keeps_r_minus_u_groups_available(
    replicas: int,
    partition: int,
    u: int | str,
    m: int | str,
    adversarial: bool,
    actions: list[tuple[object, ...]],
) -> None:
    """From an all-available LWS, with template changes (also mid-rollout), partition changes
    and group failures at any time:

    * every plan that puts a ready group at risk (lowers the partition past a ready old group,
      or gives back a ready surge group) leaves at least R - U ready groups alone, surge
      groups included (U with the 0/0 fencepost);
    * so, without failures, at least R - U groups are available at every moment, even with a
      StatefulSet controller that ignores its own maxUnavailable.

    With failures the second cannot hold: the partition never goes back up, so a group that
    fails after an old group was exposed and before it is replaced is not compensated."""
    cluster = new_cluster(replicas, partition, u, m, adversarial=adversarial)
    floor = replicas - cluster.budget
    failed = False
    cluster.revision += 1
    for action in actions:
        seen = len(cluster.plans)
        apply(cluster, action)
        for inp, result in cluster.plans[seen:]:
            at_risk, kept = plan_disruption(inp, result)
            assert not at_risk or kept >= floor
        failed = failed or action[0] == "fail"
        if not failed:
            assert cluster.available() >= floor
    cluster.settle()


def plan_disruption(inp: RolloutInput, result: RolloutPlan) -> tuple[int, int]:
    """(ready groups the plan newly puts at risk, ready groups it leaves alone)."""
    states, new_partition, kept_groups = inp.states, result.partition, result.replicas
    exposed = states[new_partition : min(inp.sts_partition, kept_groups)]
    at_risk = sum(ready and not updated for ready, updated in exposed)
    at_risk += sum(ready for ready, _ in states[kept_groups:])  # surge given back
    kept = sum(
        ready and (i < new_partition or updated)
        for i, (ready, updated) in enumerate(states[:kept_groups])
    )
    return at_risk, kept


def test_old_unready_groups_are_counted_up_to_the_partition() -> None:
    """Fix: upstream counts unready old groups below the step partition once (R=6, U=2: step
    partition 3, group 0 lifts it to 4) and misses group 3, which is also down, so replacing
    group 4 leaves 3 of 6 available. Counted up to the partition, it stays at 5."""
    states = [DOWN, OLD, OLD, DOWN, OLD, DONE]
    assert plan(states, replicas=6, max_unavailable=2, sts_partition=5) == (6, 5)


def test_new_revision_mid_rollout_keeps_the_surge_groups_until_the_step_reaches_them() -> None:
    """Fix: upstream resets the partition to min(R, S) on a new revision, which exposes every
    surge group at once. Counter-example (R=1, U=0, M=1): surge group 1 is ready and carries
    the load while group 0 is being replaced; a second template change would replace group 1
    immediately, leaving 0 of 1 available. Restarting from S keeps it until the rolling step
    (which counts it as surge capacity) gets there."""
    cluster = new_cluster(1, 0, 0, 1, adversarial=True)
    cluster.revision = 2
    cluster.step()  # (S, partition) = (2, 1): surge group 1 on revision 2
    cluster.step()
    cluster.become_ready(1)
    cluster.step()  # (2, 0): group 0 replaced; group 1 carries the load
    assert (cluster.sts_replicas, cluster.sts_partition, cluster.available()) == (2, 0, 1)
    cluster.revision = 3  # before group 0 is ready
    cluster.step()
    assert cluster.sts_partition == 2
    assert cluster.available() == 1
    cluster.settle()


def test_availability_among_the_first_r_groups_drops_below_r_minus_u_with_surge() -> None:
    """By design a ready surge group replaces an old group's capacity, so the intuitive bound
    "R - U of groups 0..R-1 available" does not hold when maxSurge > 0 (here R=1, U=0, M=1),
    even with a faithful StatefulSet controller."""
    cluster = new_cluster(1, 0, 0, 1)
    cluster.revision = 2
    cluster.step()
    cluster.step()
    cluster.become_ready(1)
    cluster.step()
    first_r = sum(g.ready for i, g in cluster.groups.items() if i < cluster.replicas)
    assert first_r == 0 and cluster.available() == 1


@settings(max_examples=1000, deadline=None)
@given(
    replicas=st.integers(0, 6),
    partition=st.integers(0, 7),
    u=budgets,
    m=budgets,
    adversarial=st.booleans(),
    actions=st.lists(st.one_of(progress, spec_change), max_size=50),
)
def test_any_history_is_safe_and_terminates(
    replicas: int,
    partition: int,
    u: int | str,
    m: int | str,
    adversarial: bool,
    actions: list[tuple[object, ...]],
) -> None:
    """Template, replicas and partition changes and group failures at any time: every plan
    stays within R + maxSurge, never updates below P and never raises the partition within
    a rollout (checked in Cluster); once the spec stops changing and groups become ready,
    the rollout ends with partition P, every group >= P updated and, with P = 0, R groups."""
    cluster = new_cluster(replicas, partition, u, m, adversarial=adversarial)
    for action in actions:
        apply(cluster, action)
    cluster.settle()


@settings(max_examples=400, deadline=None)
@given(
    replicas=st.integers(1, 6),
    new_replicas=st.integers(0, 6),
    u=budgets,
    m=budgets,
    before=st.lists(progress, max_size=15),
    after=st.lists(progress, max_size=15),
    with_template=st.booleans(),
)
def test_replicas_changed_mid_rollout(
    replicas: int,
    new_replicas: int,
    u: int | str,
    m: int | str,
    before: list[tuple[object, ...]],
    after: list[tuple[object, ...]],
    with_template: bool,
) -> None:
    cluster = new_cluster(replicas, 0, u, m)
    cluster.revision += 1
    for action in before:
        apply(cluster, action)
    cluster.replicas = new_replicas
    cluster.revision += with_template
    for action in after:
        apply(cluster, action)
    cluster.settle()


@settings(max_examples=400, deadline=None)
@given(
    replicas=st.integers(1, 6),
    partition=st.integers(0, 3),
    u=budgets,
    m=budgets,
    before=st.lists(progress, min_size=1, max_size=15),
    after=st.lists(progress, max_size=15),
)
def test_second_template_change_mid_rollout(
    replicas: int,
    partition: int,
    u: int | str,
    m: int | str,
    before: list[tuple[object, ...]],
    after: list[tuple[object, ...]],
) -> None:
    cluster = new_cluster(replicas, partition, u, m)
    cluster.revision += 1
    for action in before:
        apply(cluster, action)
    cluster.revision += 1
    for action in after:
        apply(cluster, action)
    cluster.settle()
    assert all(g.revision in (1, 3) for g in cluster.groups.values())
