"""Rolling-update arithmetic: the leader StatefulSet's partition, replicas and maxUnavailable.

As upstream's pkg/controllers/leaderworkerset_controller.go computes them: rollingUpdateParameters
and its helpers (the cases in order, the partition, scaling), and
constructLeaderStatefulSetApplyConfiguration (the StatefulSet's own maxUnavailable). Groups are
replaced from the highest index down: the StatefulSet controller recreates every leader at an
index >= partition, and lowering the partition step by step is how availability is protected.
Deliberate departures from upstream are marked "Fix:" and listed in docs/compatibility.md.

Symbols: R = spec.replicas, S = the leader StatefulSet's replicas,
P = spec partition, U = maxUnavailable and M = maxSurge (both scaled on R).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, overload

from lws_operator.api import constants as c
from lws_operator.api.intstr import scaled_value
from lws_operator.api.models import LeaderWorkerSetSpec
from lws_operator.plan.keys import RevisionKey
from lws_operator.plan.lws.groups import Group
from lws_operator.plan.meta import annotations_of, statefulset_partition, statefulset_replicas

# One group index's state for the arithmetic: (ready, updated). A missing leader or worker
# StatefulSet is neither.
State = tuple[bool, bool]


@dataclass(frozen=True)
class RolloutInput:
    replicas: int
    """R, spec.replicas."""
    partition: int
    """P, spec.rolloutStrategy.rollingUpdateConfiguration.partition."""
    max_unavailable: int | str
    max_surge: int | str
    sts_exists: bool
    sts_replicas: int
    """S, the leader sts spec.replicas (0 when there is no sts)."""
    sts_partition: int
    """The leader sts's current partition (0 when there is none)."""
    replicas_annotation: int | None
    """The sts annotation leaderworkerset.sigs.k8s.io/replicas: R at the last apply. None when
    missing or unparsable (upstream fails the reconcile; we treat it as "R changed", which only
    clamps the partition for one pass, and the next apply rewrites it)."""
    revision_changed: bool
    """A new revision was created in this reconcile ("lwsUpdated")."""
    states: Sequence[State]
    """(ready, updated) per index in [0, S)."""


@dataclass(frozen=True)
class RolloutPlan:
    partition: int
    replicas: int
    sts_max_unavailable: int
    """The leader sts updateStrategy.rollingUpdate.maxUnavailable."""
    released_surge: tuple[int, int] | None = None
    """(first, last) index of the surge groups a rolling step gives back (upstream posts
    GroupsProgressing "deleting surge replica(s)" for them); None when none are."""


@dataclass(frozen=True)
class _Budget:
    """maxUnavailable and maxSurge scaled on R, as upstream's rollingUpdateParameters does."""

    replicas: int
    max_unavailable: int
    max_surge: int

    @property
    def burst(self) -> int:
        return self.replicas + self.max_surge

    @property
    def rolling_unavailable(self) -> int:
        # Fix: when both scale to 0 (e.g. maxUnavailable 50% after /scale to R=1; the "must
        # not be 0" check runs only on create and update of the LWS itself), upstream's
        # rolling step is 0 and the rollout never moves. Like a Deployment, allow one.
        if self.max_unavailable == 0 and self.max_surge == 0 and self.replicas > 0:
            return 1
        return self.max_unavailable

    def want_replicas(self, unready: int) -> int:
        """calculateRollingUpdateReplicas: full burst while many groups are unready, then
        give surge back as the remaining unready groups fit within maxUnavailable."""
        if unready <= self.max_surge:
            return self.replicas + max(0, unready - self.max_unavailable)
        return self.burst


def _budget(inp: RolloutInput) -> _Budget:
    r = inp.replicas
    surge = min(scaled_value(inp.max_surge, r, round_up=True), r)  # no point in more than 2R
    return _Budget(r, scaled_value(inp.max_unavailable, r, round_up=False), surge)


def sts_max_unavailable(replicas: int, max_unavailable: int | str, max_surge: int | str) -> int:
    """The leader StatefulSet's maxUnavailable (upstream's
    constructLeaderStatefulSetApplyConfiguration): maxUnavailable + min(maxSurge, replicas),
    both scaled, at least 1."""
    unavailable = scaled_value(max_unavailable, replicas, round_up=False)
    surge = scaled_value(max_surge, replicas, round_up=True)
    return max(1, unavailable + min(surge, replicas))


def plan_rollout(inp: RolloutInput) -> RolloutPlan:
    """The leader sts's (partition, replicas, maxUnavailable) for this reconcile.

    Raises ValueError on a malformed IntOrString or when ``states`` does not match S.
    """
    if inp.replicas < 0 or inp.sts_replicas < 0:
        raise ValueError("replicas must be >= 0")
    if len(inp.states) != (inp.sts_replicas if inp.sts_exists else 0):
        raise ValueError(
            f"states has {len(inp.states)} entries for a leader sts with "
            f"{inp.sts_replicas if inp.sts_exists else 0} replicas"
        )
    budget = _budget(inp)
    partition, replicas, rolling = _partition_and_replicas(inp, budget)
    floor = max(0, inp.partition)  # 4.5: groups below P are never updated
    released = rolling and replicas < inp.sts_replicas
    return RolloutPlan(
        partition=max(partition, floor),
        replicas=replicas,
        sts_max_unavailable=sts_max_unavailable(inp.replicas, inp.max_unavailable, inp.max_surge),
        released_surge=(replicas, inp.sts_replicas - 1) if released else None,
    )


def _partition_and_replicas(inp: RolloutInput, b: _Budget) -> tuple[int, int, bool]:
    """Upstream's rollingUpdateParameters, cases 1-6 in order: (partition, replicas, whether the
    replicas are a rolling step's, from ``want_replicas``); the caller raises the partition to P."""
    r, s, current = inp.replicas, inp.sts_replicas, inp.sts_partition

    # 1. No leader sts: create R groups, all on the current revision. Whatever the caller
    #    says about the revision, never surge here (lws#614).
    if not inp.sts_exists:
        return 0, r, False

    # 2. A new revision: restart the walk from the top. A scale-up in the same change comes
    #    first and its new indices start on the new template; otherwise burst (surge groups
    #    appear at [R, R+M)). Fix: upstream restarts from min(R, S), which replaces every
    #    existing surge group at once, even while it carries the load of old groups that are
    #    down; from S, case 6 reaches them within its budget (they count as surge there).
    if inp.revision_changed:
        return (s, r, False) if s < r else (s, b.want_replicas(r), True)

    # 3. At rest. Fix (root cause of lws#614): upstream tests `partition == 0`, so with P > 0
    #    every pass falls through to case 6 and bursts while more than U groups are unready,
    #    e.g. right after creation. The partition can never go below P, so a sts at P with R
    #    replicas is at rest too.
    if current <= max(0, inp.partition) and s == r:
        return 0, r, False

    # 4. Scale up first; the rollout resumes once the new groups exist.
    if s < r:
        return current, r, False

    unready = sum(1 for ready, updated in inp.states[:r] if not (ready and updated))

    # 5. R changed mid-rollout: keep the partition within the new burst range this pass.
    if inp.replicas_annotation != r:
        return min(current, b.burst), b.want_replicas(unready), True

    # 6. Normal progress. Each surge group that exists lets one more old group go down.
    rolling_step = b.rolling_unavailable + b.max_surge - (b.burst - s)
    partition = _rolling_partition(inp.states, rolling_step, current)
    return partition, b.want_replicas(unready), True


def _unready(states: Sequence[State]) -> int:
    return sum(1 for ready, _ in states if not ready)


def _rolling_partition(states: Sequence[State], rolling_step: int, current: int) -> int:
    """Upstream's rollingUpdatePartition: the next partition, never above ``current``."""
    s = len(states)
    done_tail = 0
    for ready, updated in reversed(states):
        if not (ready and updated):
            break
        done_tail += 1
    step_partition = max(0, s - done_tail - rolling_step)
    # Old groups already unavailable below the partition have used up part of the budget.
    # Fix: upstream counts them below the step partition only, once; an unready group that
    # the shift moves below the partition then goes uncounted and one group too many is
    # replaced. Shifting until no new one is found counts them all.
    partition = step_partition
    while partition < (shifted := step_partition + _unready(states[:partition])):
        partition = shifted
    # Replacing groups that are unready (or already updated) costs no availability; this also
    # keeps a rollout from sticking when everything is unready.
    for idx in range(min(partition, s - 1), step_partition - 1, -1):
        ready, updated = states[idx]
        if ready and not updated:
            break
        partition = idx
    return min(partition, current)


def rollout_input(
    *,
    spec: LeaderWorkerSetSpec,
    leader_sts: Mapping[str, Any] | None,
    groups: Sequence[Group],
    key: RevisionKey,
    revision_changed: bool,
) -> RolloutInput:
    """The arithmetic's input from what is observed: the spec, the leader StatefulSet and its
    groups, and the revision the groups should run."""
    cfg = spec.rollout_strategy.rolling_update_configuration
    size = spec.leader_worker_template.size
    annotation = annotations_of(leader_sts).get(c.REPLICAS_ANNOTATION)
    return RolloutInput(
        replicas=spec.replicas,
        partition=cfg.partition,
        max_unavailable=cfg.max_unavailable,
        max_surge=cfg.max_surge,
        sts_exists=leader_sts is not None,
        sts_replicas=statefulset_replicas(leader_sts),
        sts_partition=statefulset_partition(leader_sts),
        replicas_annotation=int(annotation) if annotation and annotation.isdigit() else None,
        revision_changed=revision_changed,
        states=_States(groups, size, key),
    )


class _States(Sequence[State]):
    """(ready, updated) of each group, worked out when first read: a pass at rest (case 3 of
    ``_partition_and_replicas``) reads none, so a pod event costs no loop over the groups."""

    def __init__(self, groups: Sequence[Group], size: int, key: RevisionKey) -> None:
        self._groups, self._size, self._key = groups, size, key

    @cached_property
    def _states(self) -> list[State]:
        return [(g.ready(self._size), g.updated(self._size, self._key)) for g in self._groups]

    def __len__(self) -> int:
        return len(self._groups)

    @overload
    def __getitem__(self, index: int) -> State: ...
    @overload
    def __getitem__(self, index: slice) -> list[State]: ...
    def __getitem__(self, index: int | slice) -> State | list[State]:
        return self._states[index]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    def __hash__(self) -> int:
        return hash(tuple(self._states))

    def __repr__(self) -> str:
        return repr(self._states)
