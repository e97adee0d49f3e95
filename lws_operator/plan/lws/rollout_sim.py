"""What a change to a LeaderWorkerSet will do, step by step: the sequence of leader
StatefulSet (replicas, partition) that the operator's own planner (:func:`plan_rollout`)
produces, assuming the groups it replaces or creates become ready one at a time, in the order
they went down. Pure; ``kubectl lws plan`` prints it.

The StatefulSet controller is modelled as it behaves for the leader StatefulSet: indices at or
above the partition are replaced from the highest down, at most ``maxUnavailable`` (the
StatefulSet's own, :func:`lws_operator.plan.lws.rollout.sts_max_unavailable`) unready at once; new
indices start on the new revision when at or above the partition; indices at or above
``replicas`` go away.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lws_operator.api.models import LeaderWorkerSetSpec
from lws_operator.plan.lws import revision as rev
from lws_operator.plan.lws.rollout import RolloutInput, State, plan_rollout


@dataclass(frozen=True)
class Step:
    replicas: int
    partition: int
    updated: tuple[int, ...]
    """Groups on the new revision."""
    unready: tuple[int, ...]
    """Groups not ready after this step (being created or replaced)."""
    note: str


@dataclass
class _Group:
    ready: bool
    updated: bool


def _fmt(indices: Sequence[int]) -> str:
    return ",".join(str(i) for i in indices) or "-"


def simulate_rollout(
    old: LeaderWorkerSetSpec,
    new: LeaderWorkerSetSpec,
    *,
    sts_replicas: int | None = None,
    sts_partition: int = 0,
    states: Sequence[State] | None = None,
    max_steps: int = 10_000,
) -> list[Step]:
    """Steps from the current state (step 0) until the LeaderWorkerSet is at rest. By default
    the current state is ``old`` at rest: ``old.replicas`` groups, all ready. ``states`` are
    (ready, updated) per index, as :class:`RolloutInput` takes them."""
    size_replicas = old.replicas if sts_replicas is None else sts_replicas
    if states is None:
        states = [(True, True)] * size_replicas
    changed = rev.revision_key(old) != rev.revision_key(new)
    groups = [_Group(ready, updated and not changed) for ready, updated in states]
    cfg = new.rollout_strategy.rolling_update_configuration
    replicas, partition = size_replicas, sts_partition
    down: list[int] = [i for i, g in enumerate(groups) if not g.ready]  # in order of going down
    steps = [
        Step(
            replicas,
            partition,
            tuple(i for i, g in enumerate(groups) if g.updated),
            tuple(down),
            "current state",
        )
    ]
    annotation: int | None = old.replicas
    first = True
    became_ready: list[int] = []
    for _ in range(max_steps):
        plan = plan_rollout(
            RolloutInput(
                replicas=new.replicas,
                partition=cfg.partition,
                max_unavailable=cfg.max_unavailable,
                max_surge=cfg.max_surge,
                sts_exists=True,
                sts_replicas=replicas,
                sts_partition=partition,
                replicas_annotation=annotation,
                revision_changed=first and changed,
                states=[(g.ready, g.updated) for g in groups],
            )
        )
        first, annotation = False, new.replicas
        notes: list[str] = []
        if plan.replicas < replicas:
            notes.append(f"removes groups {_fmt(range(plan.replicas, replicas))}")
            del groups[plan.replicas :]
            down = [i for i in down if i < plan.replicas]
        for i in range(replicas, plan.replicas):
            groups.append(_Group(ready=False, updated=i >= plan.partition))
            down.append(i)
        if plan.replicas > replicas:
            notes.append(f"creates groups {_fmt(range(replicas, plan.replicas))}")
        replicas, partition = plan.replicas, plan.partition
        replaced = []
        for i in range(replicas - 1, partition - 1, -1):
            unready_above = sum(1 for g in groups[partition:] if not g.ready)
            if unready_above >= plan.sts_max_unavailable:
                break
            if not groups[i].updated:
                groups[i] = _Group(ready=False, updated=True)
                down.append(i)
                replaced.append(i)
        if replaced:
            notes.append(f"replaces groups {_fmt(sorted(replaced))}")
        moved = (replicas, partition) != (steps[-1].replicas, steps[-1].partition)
        if notes or moved:
            after = f"after group {_fmt(became_ready)} became ready: " if became_ready else ""
            steps.append(
                Step(
                    replicas,
                    partition,
                    tuple(i for i, g in enumerate(groups) if g.updated),
                    tuple(sorted(down)),
                    after + ("; ".join(notes) or "moves the partition"),
                )
            )
            became_ready = []
        if not down:
            if not (notes or moved):
                break  # at rest
            continue
        i = down.pop(0)
        groups[i].ready = True
        became_ready.append(i)
    else:
        raise RuntimeError(f"no rest after {max_steps} steps: {steps[-3:]}")
    if steps[-1].unready:
        after = f"after group {_fmt(became_ready)} became ready: " if became_ready else ""
        updated = tuple(i for i, g in enumerate(groups) if g.updated)
        steps.append(Step(replicas, partition, updated, (), after + "at rest"))
    return steps


def format_steps(steps: Sequence[Step]) -> str:
    rows = [("STEP", "REPLICAS", "PARTITION", "UPDATED", "NOT READY", "WHAT HAPPENS")]
    rows += [
        (str(n), str(s.replicas), str(s.partition), _fmt(s.updated), _fmt(s.unready), s.note)
        for n, s in enumerate(steps)
    ]
    return format_table(rows)


def format_table(rows: Sequence[Sequence[str]]) -> str:
    """Columns padded like kubectl's tables (three spaces apart; the last one unpadded)."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])] + [row[-1]]
        lines.append("   ".join(cells).rstrip())
    return "\n".join(lines) + "\n"
