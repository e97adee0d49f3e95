"""Voluntary disruption in whole groups: whether an eviction of an LWS pod may go through now,
and how a group is moved off a node, surge first (docs/operator.md "Disruption").

A PodDisruptionBudget counts pods; here the unit is the group. An eviction of a pod of an
available group ``g`` never goes through at once: it records a *move* of ``g`` and is answered
429, as a PDB answers, and the evicting client (``kubectl drain``) retries. The move starts a
surge group first (index ``R + j``, like a rolling update's surge), and once that one is Ready
releases group ``g`` as a whole (every pod deleted, leader first, so no half group keeps its
GPUs). The StatefulSets rebuild ``g`` under its own index and names on nodes that are not
cordoned; the retried eviction of a released pod then goes through (it is terminating, or
gone); once ``g`` is Ready again the surge group is given back. Where no surge is possible
(``maxSurge`` 0, no capacity for the surge group, a rollout in progress), a move releases the
group without one, only while no more than ``B`` groups are unavailable.

At most ``max(B, 1)`` moves of available groups run at a time; releasing a group that is not
available costs nothing and is never refused. ``B`` is the LWS annotation
``lws-operator.x-k8s.io/disruption-budget`` (an integer or a percentage of replicas), else the
rollout's ``maxUnavailable``.

The moves live in the cluster, as JSON in the leader StatefulSet's annotation
``lws-operator.x-k8s.io/disruptions`` (written with the resourceVersion it was read at, so
concurrent evictions, answered by any replica, and the reconcile never lose each other's
writes; an operator restart resumes every move where it stood).

Names are reused: once a released pod is gone, its StatefulSet makes a pod of the same name, and
``kubectl drain`` retries its eviction by name on that new pod. An eviction of a pod whose name
was released by a move, when the pod now carrying it is a later incarnation on a node that is not
cordoned, is answered 404 ("the pod you evicted is gone"), which ends that pod's drain without
touching the rebuilt group. The records of released pods are kept ``RECENT_TTL`` after a move.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from lws_operator.api import constants as c
from lws_operator.api.intstr import scaled_value
from lws_operator.api.models import LeaderWorkerSet
from lws_operator.plan.events import CREATE, DELETE, UPDATE, Event, normal, warning
from lws_operator.plan.lws.groups import Group, Obj
from lws_operator.plan.lws.rollout import RolloutInput, RolloutPlan
from lws_operator.plan.meta import (
    annotations_of,
    is_deleting,
    labels_of,
    name_of,
    resource_version_of,
    statefulset_partition,
    uid_of,
)
from lws_operator.plan.timestamps import format_time, parse_time

BUDGET_ANNOTATION = "lws-operator.x-k8s.io/disruption-budget"
"""On the LWS: at most this many groups unavailable through evictions (int or percentage)."""
STATE_ANNOTATION = "lws-operator.x-k8s.io/disruptions"
"""On the leader StatefulSet: the moves in progress and the recently released pods (JSON)."""
RECENT_TTL = datetime.timedelta(minutes=5)

REQUESTED = "Requested"
SURGING = "Surging"
RELEASED = "Released"

MOVING_GROUP = "MovingGroup"
MOVED_GROUP = "MovedGroup"
INVALID_BUDGET = "InvalidDisruptionBudget"


# ---- the budget ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Budget:
    groups: int
    """B: groups that evictions may leave unavailable at a time."""
    surge: int
    """maxSurge scaled on replicas: surge groups moves may use at a time."""
    source: str
    """Where B comes from, for people: the annotation or maxUnavailable."""
    error: str | None = None
    """Why the annotation was ignored, if it was."""

    @property
    def moves(self) -> int:
        """Moves of available groups at a time: B, and one when B is 0 (a surge move keeps
        every group available)."""
        return max(self.groups, 1)


def budget(
    annotations: Mapping[str, str], replicas: int, max_unavailable: int | str, max_surge: int | str
) -> Budget:
    """B from the LWS annotation, else the rollout's maxUnavailable (both scaled on replicas,
    rounded down; when maxUnavailable and maxSurge both scale to 0, 1, as rollouts do)."""
    surge = min(scaled_value(max_surge, replicas, round_up=True), replicas)
    unavailable = scaled_value(max_unavailable, replicas, round_up=False)
    default = 1 if unavailable == 0 and surge == 0 and replicas > 0 else unavailable
    raw = annotations.get(BUDGET_ANNOTATION)
    if raw is None:
        return Budget(default, surge, "maxUnavailable")
    value: int | str = int(raw) if raw.strip().isdigit() else raw.strip()
    try:
        groups = scaled_value(value, replicas, round_up=False)
    except ValueError:
        error = (
            f"metadata.annotations[{BUDGET_ANNOTATION}]: Invalid value: {raw!r}: must be an "
            "integer >= 0 or a percentage such as '25%'; using maxUnavailable"
        )
        return Budget(default, surge, "maxUnavailable", error)
    return Budget(groups, surge, "annotation")


def invalid_budget(error: str) -> Event:
    return warning(INVALID_BUDGET, UPDATE, error)


# ---- the state -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Move:
    """Group ``group`` being moved, asked for by the eviction of ``pod`` (on ``node``)."""

    group: int
    pod: str
    node: str
    since: str
    """When the first eviction asked for it (RFC 3339)."""
    phase: str = REQUESTED
    counted: bool = True
    """The group was available when asked: the move uses the budget."""
    slot: bool = False
    """It holds a surge group."""
    released: Mapping[str, str] = field(default_factory=dict)
    """Pod name -> uid of every pod released (Released phase)."""
    released_at: str = ""
    why: str = ""
    """What it waits for now, for people (kubectl lws status, the eviction's answer)."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "group": self.group,
            "pod": self.pod,
            "node": self.node,
            "since": self.since,
            "phase": self.phase,
            "counted": self.counted,
            "slot": self.slot,
            "why": self.why,
        }
        if self.released:
            out["released"] = dict(sorted(self.released.items()))
            out["releasedAt"] = self.released_at
        return out

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Move:
        released = raw.get("released") or {}
        return cls(
            group=int(raw["group"]),
            pod=str(raw.get("pod") or ""),
            node=str(raw.get("node") or ""),
            since=str(raw.get("since") or ""),
            phase=str(raw.get("phase") or REQUESTED),
            counted=bool(raw.get("counted", True)),
            slot=bool(raw.get("slot", False)),
            released={str(k): str(v) for k, v in dict(released).items()},
            released_at=str(raw.get("releasedAt") or ""),
            why=str(raw.get("why") or ""),
        )


@dataclass(frozen=True)
class Recent:
    """The pods a finished move released: their names come back on new pods."""

    group: int
    pods: Mapping[str, str]
    at: str

    def to_json(self) -> dict[str, Any]:
        return {"group": self.group, "pods": dict(sorted(self.pods.items())), "at": self.at}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Recent:
        pods = {str(k): str(v) for k, v in dict(raw.get("pods") or {}).items()}
        return cls(int(raw["group"]), pods, str(raw.get("at") or ""))


@dataclass(frozen=True)
class DisruptionState:
    moves: tuple[Move, ...] = ()
    recent: tuple[Recent, ...] = ()

    def move_of(self, group: int) -> Move | None:
        return next((m for m in self.moves if m.group == group), None)

    @property
    def counted(self) -> tuple[Move, ...]:
        return tuple(m for m in self.moves if m.counted)

    @property
    def slots(self) -> int:
        return sum(1 for m in self.moves if m.slot)

    def to_annotation(self) -> str | None:
        """The annotation's value; None when there is nothing to keep."""
        if not self.moves and not self.recent:
            return None
        body = {
            "moves": [m.to_json() for m in self.moves],
            "recent": [r.to_json() for r in self.recent],
        }
        return json.dumps(body, separators=(",", ":"), sort_keys=True)


def read_state(leader_sts: Obj | None) -> DisruptionState:
    """The state kept on the leader StatefulSet; an unreadable value counts as none (it is
    the operator's own, rewritten on the next move)."""
    raw = annotations_of(leader_sts).get(STATE_ANNOTATION)
    if not raw:
        return DisruptionState()
    try:
        body = json.loads(raw)
        return DisruptionState(
            tuple(Move.from_json(m) for m in body.get("moves") or []),
            tuple(Recent.from_json(r) for r in body.get("recent") or []),
        )
    except (ValueError, TypeError, KeyError, AttributeError):
        return DisruptionState()


def state_patch(state: DisruptionState, resource_version: str) -> dict[str, Any]:
    """A merge patch of the leader StatefulSet writing ``state``, refused (409) unless the
    object is still at ``resource_version``."""
    return {
        "metadata": {
            "resourceVersion": resource_version,
            "annotations": {STATE_ANNOTATION: state.to_annotation()},
        }
    }


# ---- the eviction's answer -------------------------------------------------------------------


@dataclass(frozen=True)
class EvictionAnswer:
    allowed: bool
    code: int = 200
    message: str = ""
    record: DisruptionState | None = None
    """A new state to write before answering (a move was asked for)."""

    def status(self) -> dict[str, Any]:
        """The AdmissionResponse's status of a refusal (metav1.Status)."""
        if self.code == 404:
            return {"code": 404, "reason": "NotFound", "message": self.message}
        # As a PodDisruptionBudget's refusal: no retryAfterSeconds (the API server would turn
        # it into a Retry-After header, which client-go retries silently); the client retries.
        return {
            "code": 429,
            "reason": "TooManyRequests",
            "message": self.message,
            "details": {"causes": [{"type": "DisruptionBudget", "message": self.message}]},
        }


@dataclass(frozen=True)
class EvictionInput:
    lws_name: str
    replicas: int
    size: int
    budget: Budget
    state: DisruptionState
    groups: Sequence[Group]
    pod: Obj
    node_cordoned: bool
    """The pod's node is unschedulable (being drained)."""
    now: datetime.datetime


def _allow(message: str) -> EvictionAnswer:
    return EvictionAnswer(True, message=message)


def _retry(message: str, record: DisruptionState | None = None) -> EvictionAnswer:
    return EvictionAnswer(False, 429, f"{message}; retry", record)


def _released_before(state: DisruptionState, group: int, pod: Obj) -> str | None:
    """The uid of the pod of this name a move released, when ``pod`` is a later one."""
    name, uid = name_of(pod), uid_of(pod)
    records = [m.released for m in state.moves if m.group == group]
    records += [r.pods for r in state.recent if r.group == group]
    for record in records:
        old = record.get(name)
        if old is not None and old != uid and uid not in record.values():
            return old
    return None


def _phase_note(lws: str, move: Move) -> str:
    return f"group {move.group} of {lws} is being replaced: {move.why or move.phase}"


def answer_eviction(inp: EvictionInput) -> EvictionAnswer:
    """Whether the eviction of ``inp.pod`` may go through now (see the module docstring)."""
    pod, lws = inp.pod, inp.lws_name
    name = name_of(pod)
    phase = (pod.get("status") or {}).get("phase")
    if is_deleting(pod) or phase in ("Succeeded", "Failed"):
        return _allow(f"pod {name} is already terminating or finished")
    index_label = labels_of(pod).get(c.GROUP_INDEX_LABEL, "")
    if not index_label.isdigit():
        return _allow(f"pod {name} is not in a group")
    index = int(index_label)
    old = _released_before(inp.state, index, pod)
    on_node = bool((pod.get("spec") or {}).get("nodeName"))
    if old is not None and not (inp.node_cordoned and on_node):
        return EvictionAnswer(
            False,
            404,
            f'pods "{name}" not found: the pod evicted (uid {old}) was released with group '
            f"{index} of {lws}; the pod now named {name} (uid {uid_of(pod)}) is its replacement",
        )
    if phase != "Running" or not (pod.get("spec") or {}).get("nodeName"):
        return _allow(f"pod {name} is not running: evicting it disrupts nothing")
    group = inp.groups[index] if index < len(inp.groups) else None
    if group is None or all(uid_of(m) != uid_of(pod) for m in group.members):
        return _allow(f"pod {name} is not a member of a group of {lws}")
    move = inp.state.move_of(index)
    if move is not None:
        if move.phase == RELEASED and uid_of(pod) not in move.released.values():
            return _retry(f"group {index} of {lws} is being rebuilt after a move")
        return _retry(_phase_note(lws, move))
    node = str((pod.get("spec") or {}).get("nodeName") or "")
    new = Move(index, name, node, format_time(inp.now), REQUESTED, counted=True)
    if not group.ready(inp.size):
        new = replace(new, counted=False, why="not available: releasing it whole")
        return _retry(
            f"group {index} of {lws} is not available: releasing it whole",
            replace(inp.state, moves=(*inp.state.moves, new)),
        )
    busy = inp.state.counted
    if len(busy) >= inp.budget.moves:
        b = inp.budget.groups
        others = ", ".join(f"group {m.group} ({m.why or m.phase})" for m in busy)
        return _retry(
            f"Cannot evict pod {name}: at most {inp.budget.moves} group(s) of {lws} may be "
            f"moved at a time (disruption budget {b} from {inp.budget.source}); being moved: "
            f"{others}"
        )
    new = replace(new, why="starting a replacement first")
    return _retry(
        f"group {index} of {lws} is being replaced: starting a replacement group first",
        replace(inp.state, moves=(*inp.state.moves, new)),
    )


# ---- the reconcile's part --------------------------------------------------------------------


@dataclass(frozen=True)
class Release:
    """Delete group ``group`` whole now (its leader first)."""

    group: Group
    note: str


@dataclass(frozen=True)
class DisruptionInput:
    lws_name: str
    replicas: int
    partition: int
    """spec partition (P)."""
    size: int
    budget: Budget
    state: DisruptionState
    groups: Sequence[Group]
    """The leader StatefulSet's groups, by index (surge groups included)."""
    pods: Mapping[str, Obj]
    """This LWS's pods by name (to find released pods not yet deleting)."""
    leader_sts: Obj | None
    revision_changed: bool
    now: datetime.datetime


@dataclass(frozen=True)
class DisruptionPlan:
    state: DisruptionState
    rollout: RolloutPlan
    """The rollout's plan with the moves' surge groups added to its replicas."""
    release: tuple[Release, ...] = ()
    stray: tuple[Obj, ...] = ()
    """Released pods that are still not deleting (a pass cut short after the state was
    written): delete them."""
    events: tuple[Event, ...] = ()
    retry: float | None = None


def rollout_view(inp: RolloutInput, state: DisruptionState) -> RolloutInput:
    """The rollout's input without the moves' surge groups: they are not the rollout's."""
    held = state.slots
    if held and inp.sts_exists and inp.replicas < inp.sts_replicas:
        return replace(inp, sts_replicas=inp.replicas, states=list(inp.states[: inp.replicas]))
    return inp


def _unschedulable(group: Group | None) -> str | None:
    """The scheduler's message for a member of ``group`` it could not place, if any."""
    for pod in group.members if group is not None else ():
        for cond in (pod.get("status") or {}).get("conditions") or []:
            if (
                cond.get("type") == "PodScheduled"
                and cond.get("status") == "False"
                and cond.get("reason") == "Unschedulable"
            ):
                return f"pod {name_of(pod)}: {cond.get('message') or 'unschedulable'}"
    return None


def _seconds_since(since: str, now: datetime.datetime) -> str:
    when = parse_time(since)
    return "?" if when is None else f"{max(0, int((now - when).total_seconds()))}s"


def plan_disruption(inp: DisruptionInput, rollout: RolloutPlan) -> DisruptionPlan:
    """Advance every move one step (see the module docstring); ``rollout`` is the rollout's
    plan for the view without the moves' surge groups (:func:`rollout_view`)."""
    r, size, lws = inp.replicas, inp.size, inp.lws_name
    groups = inp.groups
    at_rest = (
        inp.leader_sts is not None
        and not inp.revision_changed
        and statefulset_partition(inp.leader_sts) <= max(0, inp.partition)
        and rollout.replicas == r
    )
    surge_limit = inp.budget.surge if at_rest else 0
    available = sum(1 for g in groups if g.ready(size))
    floor = r - inp.budget.groups
    moves: list[Move] = []
    recent = [
        x
        for x in inp.state.recent
        if (at := parse_time(x.at)) is not None and inp.now - at < RECENT_TTL
    ]
    releases: list[Release] = []
    events: list[Event] = []
    slots = 0
    for move in inp.state.moves:
        group = groups[move.group] if move.group < len(groups) else None
        if move.phase == RELEASED:
            rebuilt = (
                group is not None
                and group.ready(size)
                and uid_of(group.leader) not in move.released.values()
            )
            if group is None or rebuilt:
                recent.append(Recent(move.group, move.released, format_time(inp.now)))
                took = _seconds_since(move.since, inp.now)
                extra = "; its surge group is given back" if move.slot else ""
                events.append(
                    normal(
                        MOVED_GROUP,
                        UPDATE,
                        f"Group {move.group} of {lws} was moved off node {move.node or '-'} "
                        f"and is ready again, {took} after the eviction of pod {move.pod}{extra}",
                    )
                )
                continue
            keep = move.slot and slots < surge_limit
            if keep and _unschedulable(group) is not None and available - 1 >= floor:
                keep = False  # the surge group holds the capacity the rebuilt group needs
                available -= 1
            slots += keep
            why = "being rebuilt" + (
                f"; surge group {lws}-{r + slots - 1} stands in" if keep else ""
            )
            moves.append(replace(move, slot=keep, why=why))
            continue
        if group is None or group.leader is None:
            if move.group >= r:
                continue  # a surge or scaled-away group: gone
            moves.append(replace(move, why="waiting for its leader pod"))
            continue
        reason: str | None = None
        slot = False
        if not group.ready(size):
            reason = "it was not available"
        elif move.group < r and slots < surge_limit:
            surge_index = r + slots
            surge = groups[surge_index] if surge_index < len(groups) else None
            stuck = _unschedulable(surge)
            if surge is not None and surge.ready(size):
                slot, reason = True, f"its replacement, surge group {lws}-{surge_index}, is Ready"
            elif stuck is None:
                slots += 1
                if move.phase != SURGING:
                    events.append(
                        normal(
                            MOVING_GROUP,
                            CREATE,
                            f"Moving group {move.group} of {lws} off node {move.node or '-'} "
                            f"(eviction of pod {move.pod}): starting surge group "
                            f"{lws}-{surge_index} first",
                        )
                    )
                why = f"waiting for surge group {lws}-{surge_index} to be Ready"
                moves.append(replace(move, phase=SURGING, slot=True, why=why))
                continue
            elif available - 1 >= floor:
                reason = f"no surge possible (surge group {lws}-{surge_index} {stuck})"
            else:
                slots += 1  # keep the surge group waiting for capacity: nothing else may go
                why = f"no capacity for surge group {lws}-{surge_index} ({stuck}); waiting"
                moves.append(replace(move, phase=SURGING, slot=True, why=why))
                continue
        elif available - 1 >= floor:
            if move.group >= r:
                why_not = "it is a surge group itself"
            elif inp.budget.surge == 0:
                why_not = "maxSurge is 0"
            elif not at_rest:
                why_not = "a rollout is in progress"
            else:
                why_not = "every surge group is in use"
            reason = f"without a replacement: {why_not}"
        else:
            moves.append(
                replace(
                    move,
                    phase=REQUESTED,
                    slot=False,
                    why=f"waiting: {available} groups available, at least {max(floor, 0)} "
                    "must stay",
                )
            )
            continue
        slots += slot
        if group.ready(size):  # its surge group, if one stands in, is counted already
            available -= 1
        members = {name_of(p): uid_of(p) for p in group.members}
        note = f"Released group {move.group} of {lws} whole ({len(members)} pods): {reason}"
        releases.append(Release(group, note))
        events.append(normal(MOVING_GROUP, DELETE, note))
        moves.append(
            replace(
                move,
                phase=RELEASED,
                slot=slot,
                released=members,
                released_at=format_time(inp.now),
                why="being rebuilt",
            )
        )
    released_now = {x.group.index for x in releases}
    stray = tuple(
        pod
        for m in moves
        if m.phase == RELEASED and m.group not in released_now
        for name, uid in m.released.items()
        if (pod := inp.pods.get(name)) is not None and uid_of(pod) == uid and not is_deleting(pod)
    )
    expiry = [
        (at + RECENT_TTL - inp.now).total_seconds()
        for x in recent
        if (at := parse_time(x.at)) is not None
    ]
    planned = replace(rollout, replicas=rollout.replicas + slots) if slots else rollout
    return DisruptionPlan(
        state=DisruptionState(tuple(moves), tuple(recent)),
        rollout=planned,
        release=tuple(releases),
        stray=stray,
        events=tuple(events),
        retry=max(1.0, min(expiry)) if expiry else None,
    )


# ---- what people and the API server see ------------------------------------------------------


@dataclass(frozen=True)
class MovesStep:
    """One pass's advance of the moves: the plan, an invalid budget annotation to report (once
    per error), and the leader StatefulSet's new state to write before anything else."""

    plan: DisruptionPlan
    report: tuple[tuple[str, ...], Event] | None = None
    patch: dict[str, Any] | None = None


def plan_moves(
    lws: LeaderWorkerSet,
    leader_sts: Obj | None,
    state: DisruptionState,
    rollout: RolloutPlan,
    *,
    groups: Sequence[Group],
    pods: Mapping[str, Obj],
    revision_changed: bool,
    now: datetime.datetime,
) -> MovesStep:
    """Advance the moves the eviction webhook recorded: the surge groups they need (added to
    the rollout's replicas) and the groups to release."""
    spec = lws.spec
    cfg = spec.rollout_strategy.rolling_update_configuration
    b = budget(lws.annotations, spec.replicas, cfg.max_unavailable, cfg.max_surge)
    report = None if b.error is None else (("budget", b.error), invalid_budget(b.error))
    if not state.moves and not state.recent:
        return MovesStep(DisruptionPlan(state, rollout), report)
    plan = plan_disruption(
        DisruptionInput(
            lws_name=lws.name,
            replicas=spec.replicas,
            partition=cfg.partition,
            size=spec.leader_worker_template.size,
            budget=b,
            state=state,
            groups=groups,
            pods=pods,
            leader_sts=leader_sts,
            revision_changed=revision_changed,
            now=now,
        ),
        rollout,
    )
    patch = None
    if plan.state != state and leader_sts is not None:
        # Refused (409) when someone wrote since (an eviction): retried with fresh state.
        patch = state_patch(plan.state, resource_version_of(leader_sts))
    return MovesStep(plan, report, patch)


def describe(state: DisruptionState, lws_name: str, now: datetime.datetime) -> list[str]:
    """One line per move, for ``kubectl lws status``."""
    return [
        f"group {m.group}: {m.phase.lower()} for {_seconds_since(m.since, now)}, "
        f"asked by the eviction of pod {m.pod} (node {m.node or '-'}): {m.why or m.phase}"
        for m in state.moves
    ]


def _regex_escape(name: str) -> str:
    return name.replace(".", "[.]")


def eviction_match_expression(covered: Iterable[tuple[str, str]]) -> str:
    """The webhook's CEL matchCondition: true for an eviction of a pod named like one of a
    covered LWS's pods (``<lws>-<i>`` or ``<lws>-<i>-<j>``) in its namespace. The eviction
    reaches admission as an Eviction, which has no labels, so an objectSelector cannot pick
    LWS pods; their names can."""
    by_ns: dict[str, list[str]] = {}
    for namespace, name in sorted(set(covered)):
        by_ns.setdefault(namespace, []).append(_regex_escape(name))
    if not by_ns:
        return "false"
    alternatives = "|".join(
        f"{_regex_escape(ns)}/(?:{'|'.join(names)})" for ns, names in sorted(by_ns.items())
    )
    pattern = f"^(?:{alternatives})-[0-9]+(?:-[0-9]+)?$"
    return f"(request.namespace + '/' + request.name).matches('{pattern}')"
