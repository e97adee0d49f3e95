"""The rollout arithmetic of a DisaggregatedSet: how many replicas each role keeps on the old
revisions and has on the new one at each step, so that the roles move together.

Upstream's planner (``pkg/controllers/disaggregatedset/planner.go``), as behaviour: a rollout
is a discrete version of a straight line from ``initial_old`` to ``target``, in ``total``
steps (per role ``ceil(max(initial, target) / batch)``, the largest over the roles, where the
batch is maxSurge, else maxUnavailable, else 1)::

    new(i) = ceil(i * target / total)              old(i) = initial - floor(i * initial / total)

The controller keeps no state, so each call finds the step index from the observed replicas
and returns the next step only. A step changes the old or the new side (or both when the
surge budget forces a drain to go with a scale-up): new replicas are added while
``old + new <= target + maxSurge`` holds for every role, old ones removed while
``old + new >= target - maxUnavailable`` holds for the roles that are not growing; a revision
is never left with some roles at 0 and others not (orphan prevention). Also here: spreading a
step's drain over several old revisions, newest first (``executor.go`` ``scaleDownOld``), and
each role's budgets (``extractRollingUpdateConfig``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lws_operator.api.intstr import scaled_value

State = tuple[int, ...]


@dataclass(frozen=True)
class Budget:
    """A role's rollout budgets, in replicas (groups)."""

    max_surge: int = 1
    max_unavailable: int = 0


@dataclass(frozen=True)
class Step:
    """Replicas per role (in role order) on the old revisions together and on the new one."""

    old: State
    new: State


DEFAULT = Budget()


def role_budget(
    max_surge: int | str | None, max_unavailable: int | str | None, replicas: int
) -> Budget:
    """A role's budgets from its rollingUpdateConfiguration (None when it has none): the
    default maxSurge 1, maxUnavailable 0, unless the configuration scales (against the
    role's target replicas) to some unavailability, which then takes both values, or to some
    surge, which replaces the surge. Both 0 keep the default."""
    if max_surge is None or max_unavailable is None:
        return DEFAULT
    surge = _scaled(max_surge, replicas, round_up=True)
    unavailable = _scaled(max_unavailable, replicas, round_up=False)
    if unavailable > 0:
        return Budget(surge, unavailable)
    if surge > 0:
        return Budget(surge, DEFAULT.max_unavailable)
    return DEFAULT


def _scaled(value: int | str, replicas: int, *, round_up: bool) -> int:
    try:
        return scaled_value(value, max(replicas, 0), round_up=round_up)
    except ValueError:
        return 0  # admission refuses such values; an object that has one gets the default


def batch_size(budget: Budget) -> int:
    return budget.max_surge if budget.max_surge > 0 else max(1, budget.max_unavailable)


def total_steps(initial: State, target: State, budgets: Sequence[Budget]) -> int:
    return max(
        (
            -(-max(i, t, 0) // batch_size(b))
            for i, t, b in zip(initial, target, budgets, strict=True)
        ),
        default=0,
    )


def _next_new(target: State, new: State, total: int) -> State:
    if total == 0:
        return target
    index = min(
        (total if t == 0 else int(n * total / t) for t, n in zip(target, new, strict=True)),
        default=total,
    )
    index = min(index, total) + 1
    return tuple(
        max(min(math.ceil(index * t / total), t), n) for t, n in zip(target, new, strict=True)
    )


def _next_old(initial: State, old: State, total: int) -> State:
    if total == 0:
        return tuple(0 for _ in initial)
    index = max(
        (int((i - o) * total / i) for i, o in zip(initial, old, strict=True) if i != 0),
        default=0,
    )
    index = max(index, 0) + 1
    return tuple(
        min(max(0, i - math.floor(index * i / total)), o) for i, o in zip(initial, old, strict=True)
    )


def _complete(old: State, new: State, target: State) -> bool:
    return all(o == 0 for o in old) and all(n >= t for n, t in zip(new, target, strict=True))


def _can_drain_all(new: State, initial: State, target: State, budgets: Sequence[Budget]) -> bool:
    return all(
        n >= t - b.max_unavailable
        for n, i, t, b in zip(new, initial, target, budgets, strict=True)
        if i >= t
    )


def _no_orphans(
    old: list[int], new: State, initial: State, target: State, budgets: Sequence[Budget]
) -> None:
    """A step must not leave some roles of the old revisions at 0 while others still run:
    drain all to 0 when the new side can take over, else keep one replica in each."""
    live = [o for o, i in zip(old, initial, strict=True) if i != 0]
    if not any(o == 0 for o in live) or all(o == 0 for o in live):
        return
    if _can_drain_all(new, initial, target, budgets):
        old[:] = [0] * len(old)
        return
    for r, i in enumerate(initial):
        if old[r] == 0 and i > 0:
            old[r] = 1


def _scale_up(
    old: State, new: State, next_new: State, target: State, budgets: Sequence[Budget]
) -> Step | None:
    if not any(x > n for x, n in zip(next_new, new, strict=True)):
        return None
    for o, x, t, b in zip(old, next_new, target, budgets, strict=True):
        if t != 0 and o + x > t + b.max_surge:
            return None
    return Step(old, next_new)


def _drain(
    initial: State, old: State, new: State, target: State, total: int, budgets: Sequence[Budget]
) -> Step | None:
    floor = [
        max(0, t - b.max_unavailable - n) if i >= t else 0
        for i, n, t, b in zip(initial, new, target, budgets, strict=True)
    ]
    nxt = [max(x, f) for x, f in zip(_next_old(initial, old, total), floor, strict=True)]
    _no_orphans(nxt, new, initial, target, budgets)
    if not any(x < o for x, o in zip(nxt, old, strict=True)):
        return None
    return Step(tuple(nxt), new)


def _force_drain(
    old: State, next_new: State, initial: State, target: State, budgets: Sequence[Budget]
) -> Step | None:
    """Make room for the next scale-up: drain what the surge budget does not allow."""
    drained = []
    for o, x, i, t, b in zip(old, next_new, initial, target, budgets, strict=True):
        keep = max(0, min(o, t + b.max_surge - x))
        if i >= t:
            keep = max(keep, max(0, t - b.max_unavailable - x))
        drained.append(keep)
    if not any(d < o for d, o in zip(drained, old, strict=True)):
        return None
    _no_orphans(drained, next_new, initial, target, budgets)
    return Step(tuple(drained), next_new)


def next_step(
    initial: State, old: State, new: State, target: State, budgets: Sequence[Budget]
) -> Step | None:
    """The next step of a rollout, or None when it is complete (or cannot move)."""
    if _complete(old, new, target):
        return None
    total = total_steps(initial, target, budgets)
    if total == 0:
        return None
    if any(o > i for o, i in zip(old, initial, strict=True)):
        # More old replicas than at the start (scaled up meanwhile): back to the baseline.
        return Step(tuple(min(i, o) for i, o in zip(initial, old, strict=True)), new)
    if all(n >= t for n, t in zip(new, target, strict=True)):
        return Step(tuple(0 for _ in initial), new)
    next_new = _next_new(target, new, total)
    return (
        _scale_up(old, new, next_new, target, budgets)
        or _drain(initial, old, new, target, total, budgets)
        or _force_drain(old, next_new, initial, target, budgets)
    )


def all_steps(
    initial: State,
    target: State,
    budgets: Sequence[Budget],
    *,
    old: State | None = None,
    new: State | None = None,
) -> list[Step]:
    """The whole rollout, each step applied at once (as if every group became ready
    immediately), from ``old`` and ``new`` replicas (by default ``initial`` old ones and none
    new): for tests and ``kubectl lws plan``."""
    old = initial if old is None else old
    new = tuple(0 for _ in initial) if new is None else new
    steps = [Step(old, new)]
    for _ in range(2 * max((*initial, *target, 0)) + 10):
        step = next_step(initial, old, new, target, budgets)
        if step is None:
            break
        steps.append(step)
        old, new = step.old, step.new
    return steps


@dataclass(frozen=True)
class OldRevision:
    """One old revision's replicas per role (absent: it has no LWS for that role)."""

    revision: str
    replicas: Mapping[str, int]


def spread_drain(
    revisions: Sequence[OldRevision], roles: Sequence[str], current: State, target: State
) -> dict[tuple[str, str], int]:
    """The new replicas of old revisions' LWS, per (revision, role), for a step that takes
    the old side from ``current`` to ``target``: newest revision first (``revisions`` is in
    that order), as much as each can give. A revision a role of which reaches 0 is drained
    to 0 entirely (no orphaned role); the roles it drains beyond their budget do not consume
    it. Only changed LWS are listed."""
    budget = [c - t for c, t in zip(current, target, strict=True)]
    out: dict[tuple[str, str], int] = {}
    for rev in revisions:
        if all(b <= 0 for b in budget):
            break
        planned: dict[str, int] = {}
        left: dict[str, int] = {}
        for r, role in enumerate(roles):
            if role in rev.replicas:
                planned[role] = min(budget[r], rev.replicas[role])
                left[role] = rev.replicas[role] - planned[role]
        emptied = {role for role, n in left.items() if n == 0}
        if emptied:
            left = dict.fromkeys(left, 0)
        for r, role in enumerate(roles):
            if role not in rev.replicas or rev.replicas[role] <= left[role]:
                continue
            out[(rev.revision, role)] = left[role]
            if role in emptied or not emptied:
                budget[r] -= planned[role]
    return out
