"""The wait between recreations of a group that keeps failing (issue 16, item 2).

A group's first recreation is immediate. One that fails again soon after is a crash loop:
each further recreation waits ``initial * 2**(streak - 1)`` seconds after the previous one,
capped at ``maximum``, where ``streak`` counts the recreations since the group was last Ready
for ``reset_after`` seconds. The failed pods stay meanwhile, so their logs and restart counts
can be read. The numbers are the kubelet's CrashLoopBackOff defaults (10 s doubling to 5 min,
reset after 10 min of running). Timing is event-driven: the caller looks again after
:func:`wait`'s seconds (the reconcile's retry timer), nothing polls.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    initial: float = 10.0
    """Seconds before the second recreation of a crash loop; 0 turns the backoff off."""
    maximum: float = 300.0
    reset_after: float = 600.0
    """Seconds Ready after which a group's next failure starts a new streak."""


def delay(streak: int, backoff: Backoff) -> float:
    """Seconds to wait after the previous recreation when ``streak`` recreations preceded."""
    if streak <= 0 or backoff.initial <= 0:
        return 0.0
    # 2**60 seconds is past any cap; bounding the exponent keeps the float finite.
    return float(min(backoff.initial * 2 ** min(streak - 1, 60), backoff.maximum))


def current_streak(
    streak: int,
    ready_since: datetime.datetime | None,
    now: datetime.datetime,
    backoff: Backoff,
) -> int:
    """The streak a recreation now continues: reset once the group stayed Ready long enough."""
    if ready_since is not None and (now - ready_since).total_seconds() >= backoff.reset_after:
        return 0
    return max(0, streak)


def wait(
    *,
    streak: int,
    last: datetime.datetime | None,
    ready_since: datetime.datetime | None,
    now: datetime.datetime,
    backoff: Backoff,
) -> float:
    """Seconds from ``now`` until the group may be recreated (0: now). ``last`` is when it was
    last recreated, ``ready_since`` when its current incarnation was first seen Ready."""
    if last is None:
        return 0.0
    due = last + datetime.timedelta(
        seconds=delay(current_streak(streak, ready_since, now, backoff), backoff)
    )
    return max(0.0, (due - now).total_seconds())
