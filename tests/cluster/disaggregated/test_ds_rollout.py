"""Coordinated rollouts on the real cluster, observed at every watch event of the set's
LeaderWorkerSets: each role of each slice stays within its surge budget and keeps its
available groups, the roles stay within one step of each other, and it ends with only the
new revision; an update mid-rollout drains the newest intermediate revision first and never
leaves a revision with some roles drained and others not. Upstream's e2e ``e2e_test.go``
:179, :238, :653, :1013."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lws_operator.api import ds_constants as c
from lws_operator.kube.client import Kube
from lws_operator.plan.ds.revision import compute_revision
from lws_operator.plan.ds.rollout import Budget, total_steps
from lws_operator.plan.meta import labels_of
from lws_testbed.wait import Objects, WaitTimeout, follow_objects
from tests.cluster.disaggregated.helpers import (
    available,
    children_path,
    ds_body,
    ds_path,
    role,
    summary,
    wait_children,
    wait_ds,
)

ROLES = ("prefill", "decode")


@dataclass
class Seen:
    """Per (slice, role): groups wanted on the old revisions and the new one, and ready."""

    old: int = 0
    new: int = 0
    ready: int = 0


def state(objs: Objects, new_rev: str) -> dict[tuple[str, str], Seen]:
    out: dict[tuple[str, str], Seen] = {}
    for o in objs.values():
        labels = labels_of(o)
        key = (labels.get(c.SLICE_LABEL, "0"), labels[c.ROLE_LABEL])
        seen = out.setdefault(key, Seen())
        replicas = int(o["spec"].get("replicas", 1))
        if labels[c.REVISION_LABEL] == new_rev:
            seen.new += replicas
        else:
            seen.old += replicas
        seen.ready += int((o.get("status") or {}).get("readyReplicas") or 0)
    return out


def step_range(new: int, target: int, total: int) -> tuple[int, int]:
    """The planner's step indices k whose count ceil(k * target / total) is ``new``."""
    ks = [k for k in range(total + 1) if min(math.ceil(k * target / total), target) == new]
    assert ks, (new, target, total)
    return min(ks), max(ks)


@dataclass
class Watch:
    """Everything seen until ``done`` held, and a check run at each event."""

    events: int = 0
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)


async def follow_until(
    kube: Kube,
    ns: str,
    name: str,
    check: Callable[[Objects], list[str]],
    done: Callable[[Objects], bool],
    *,
    timeout: float = 240,
    started: float | None = None,
) -> Watch:
    watch = Watch()
    last: Objects = {}
    start = time.monotonic() if started is None else started

    async def run() -> None:
        nonlocal last
        async with contextlib.aclosing(
            follow_objects(kube, children_path(ns), label_selector=f"{c.SET_NAME_LABEL}={name}")
        ) as updates:
            async for objs in updates:
                last = objs
                watch.events += 1
                for problem in check(objs):
                    watch.failures.append(f"event {watch.events}: {problem}\n{summary(objs)}")
                if done(objs):
                    return

    try:
        await asyncio.wait_for(run(), timeout)
    except TimeoutError as e:
        raise WaitTimeout(f"the rollout of {name}", timeout, summary(last)) from e
    watch.seconds = time.monotonic() - start
    return watch


def only(objs: Objects, rev: str, want: dict[str, int], slices: int) -> bool:
    """Only revision ``rev``'s children, at ``want`` replicas per role, all ready."""
    if len(objs) != len(want) * slices:
        return False
    for o in objs.values():
        labels, status = labels_of(o), o.get("status") or {}
        n = want[labels[c.ROLE_LABEL]]
        if labels[c.REVISION_LABEL] != rev or o["spec"].get("replicas") != n:
            return False
        if status.get("readyReplicas", 0) != n:
            return False
    return True


def set_image(roles: Sequence[dict[str, Any]], image: str) -> list[dict[str, Any]]:
    for r in roles:
        r["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["image"] = (
            image
        )
    return list(roles)


async def update(kube: Kube, ns: str, name: str, image: str) -> str:
    ds = await kube.get(ds_path(ns, name))
    roles = set_image(ds["spec"]["roles"], image)
    updated = await kube.patch(ds_path(ns, name), {"spec": {"roles": roles}})
    return compute_revision(updated["spec"]["roles"])


async def test_a_rollout_keeps_budgets_and_ratio_at_every_event(
    kube: Kube, lws_namespace: str
) -> None:
    ns = lws_namespace
    want = {"prefill": 4, "decode": 2}
    budgets = {r: Budget(1, 0) for r in ROLES}
    body = ds_body(
        "roll",
        *(role(r, n, surge=1, unavailable=0) for r, n in want.items()),
        slices=2,
    )
    created = await kube.create(ds_path(ns), body)
    old_rev = compute_revision(created["spec"]["roles"])
    await wait_children(kube, ns, "roll", lambda o: only(o, old_rev, want, 2), "first revision up")
    await wait_ds(kube, ns, "roll", available, "Available")

    start = time.monotonic()
    new_rev = await update(kube, ns, "roll", "registry.k8s.io/pause:3.9")
    total = total_steps(
        tuple(want[r] for r in ROLES), tuple(want[r] for r in ROLES), [budgets[r] for r in ROLES]
    )

    def check(objs: Objects) -> list[str]:
        problems = []
        seen = state(objs, new_rev)
        for slice_index in ("0", "1"):
            ranges = []
            for r in ROLES:
                s = seen.get((slice_index, r), Seen())
                if s.old + s.new > want[r] + budgets[r].max_surge:
                    problems.append(
                        f"slice {slice_index} {r}: {s.old}+{s.new} over the surge budget"
                    )
                if s.ready < want[r] - budgets[r].max_unavailable:
                    problems.append(f"slice {slice_index} {r}: {s.ready} ready, under its budget")
                ranges.append(step_range(s.new, want[r], total))
            if max(lo for lo, _ in ranges) > min(hi for _, hi in ranges) + 1:
                problems.append(f"slice {slice_index}: roles more than one step apart: {ranges}")
        return problems

    watch = await follow_until(
        kube, ns, "roll", check, lambda o: only(o, new_rev, want, 2), started=start
    )
    assert not watch.failures, "\n".join(watch.failures[:5])
    await wait_ds(kube, ns, "roll", available, "Available at the new revision")
    print(f"rollout of 2 roles x 2 slices: {watch.seconds:.1f}s, {watch.events} LWS events")


async def _past_the_second_of(objs: Objects) -> None:
    """Until the second in which the newest of ``objs`` was created has passed.
    creationTimestamp has a resolution of one second and old revisions are ordered by it (as
    upstream's executor orders them), so children created in the same second as another
    revision's are not "newer"; nothing can be watched for a clock to advance."""
    newest = max(
        datetime.datetime.fromisoformat(o["metadata"]["creationTimestamp"]) for o in objs.values()
    )
    later = newest + datetime.timedelta(seconds=1) - datetime.datetime.now(datetime.UTC)
    await asyncio.sleep(max(0.0, later.total_seconds()))


async def test_an_update_mid_rollout_drains_the_newest_revision_first(
    kube: Kube, lws_namespace: str
) -> None:
    ns = lws_namespace
    want = {"prefill": 4, "decode": 3}
    body = ds_body(
        "abc", role("prefill", 4, surge=1, unavailable=0), role("decode", 3, surge=2, unavailable=0)
    )
    created = await kube.create(ds_path(ns), body)
    rev_a = compute_revision(created["spec"]["roles"])
    a_up = await wait_children(kube, ns, "abc", lambda o: only(o, rev_a, want, 1), "A up")
    await _past_the_second_of(a_up)
    rev_b = await update(kube, ns, "abc", "registry.k8s.io/pause:3.9")

    def b_growing(objs: Objects) -> bool:
        return state_by_revision(objs).get(rev_b, {}).get("prefill", 0) >= 2

    await wait_children(kube, ns, "abc", b_growing, "B half-way up")
    rev_c = await update(kube, ns, "abc", "registry.k8s.io/pause:3.8")
    zero_at: dict[str, int] = {}
    last: dict[str, dict[str, int]] = {}
    events = [0]

    def check(objs: Objects) -> list[str]:
        """Draining a revision's roles takes one write per role: a change of its replicas
        that leaves a role at 0 and another not must be followed by one that does not."""
        events[0] += 1
        problems = []
        by_revision = state_by_revision(objs)
        for rev in (rev_a, rev_b):
            counts = by_revision.get(rev, {})
            if sum(counts.values()) == 0:
                zero_at.setdefault(rev, events[0])
            if counts == last.get(rev, counts):
                last[rev] = counts
                continue
            before, last[rev] = last.get(rev, {}), counts
            if _orphaned(before) and _orphaned(counts):
                problems.append(f"revision {rev} left with a role drained: {before} -> {counts}")
        return problems

    watch = await follow_until(kube, ns, "abc", check, lambda o: only(o, rev_c, want, 1))
    assert not watch.failures, "\n".join(watch.failures[:5])
    # B, the newest old revision, was drained first (A still ran when B reached 0).
    assert zero_at[rev_b] < zero_at.get(rev_a, events[0] + 1), (zero_at, rev_a, rev_b)
    await wait_ds(kube, ns, "abc", available, "Available at C")


def _orphaned(counts: dict[str, int]) -> bool:
    return any(n == 0 for n in counts.values()) and any(counts.values())


def state_by_revision(objs: Objects) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for o in objs.values():
        labels = labels_of(o)
        out.setdefault(labels[c.REVISION_LABEL], {})[labels[c.ROLE_LABEL]] = int(
            o["spec"].get("replicas", 1)
        )
    return out
