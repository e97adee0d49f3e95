"""One pass's handling of broken groups, decided in two phases around the only reads it needs
(the failed containers' log tails):

1. :func:`ask`: the node problems and an invalid request to report, the recreations passed
   through the budget, backoff and requests (plan/lws/failures.py), and the evidence of each
   group about to be recreated with the log tails to read for it (plan/lws/evidence.py);
2. the reconciler reads those tails (or fails to: the reason is recorded instead);
3. :func:`record`: the history ConfigMap's write that records every recreation before it
   happens (plan/lws/history.py), the History it leaves and the events.

Then the reconciler writes the history and deletes the groups, in that order."""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, replace

from lws_operator.plan.events import Event
from lws_operator.plan.events import warning as warning_event
from lws_operator.plan.lws import failures
from lws_operator.plan.lws.backoff import Backoff
from lws_operator.plan.lws.evidence import LogRequest, collect
from lws_operator.plan.lws.failures import (
    GRACE_INVALID,
    REQUEST_INVALID,
    Evidence,
    FailureDecisions,
)
from lws_operator.plan.lws.groups import Group, Obj
from lws_operator.plan.lws.history import History, HistoryWrite, Limits, not_owned, plan_write
from lws_operator.plan.lws.nodehealth import NodeProblem, node_problems
from lws_operator.plan.lws.restart import (
    FAILED_GROUP_GRACE,
    Recreate,
    failed_group_grace,
    group_deletion,
)
from lws_operator.plan.writes import Write

Report = tuple[tuple[str, ...], Event]
"""A Warning reported once per LWS, by what it is about."""


@dataclass(frozen=True)
class Situation:
    """What the failure handling of one pass reads."""

    groups: Sequence[Group]
    size: int
    planned: tuple[Recreate, ...]
    """The recreations plan/lws/restart.py wants."""
    history: History
    nodes: Mapping[str, Obj]
    healthy_nodes: Set[str]
    annotations: Mapping[str, str]
    max_restarts: int | None
    backoff: Backoff
    limits: Limits
    now: datetime.datetime
    failed_group_grace: int | None = FAILED_GROUP_GRACE
    """The operator's configuration: seconds a failed group's pods get to stop (None: their
    own), unless the LWS's annotation says otherwise (plan/lws/restart.failed_group_grace)."""


@dataclass(frozen=True)
class Ask:
    """Phase one: decided before any log is read."""

    decided: FailureDecisions
    reports: tuple[Report, ...]
    evidence: Mapping[int, Evidence]
    """Per group to recreate, without its log tails."""
    reads: tuple[tuple[int, LogRequest], ...]
    """The log tails to read, by group."""
    handled_request: str | None
    """The recreation request carried out by this pass (recorded in the history)."""
    retry: float | None
    """Seconds after which to look again (a backoff ending), if any."""
    grace: int | None = FAILED_GROUP_GRACE
    """Seconds a failed group's pods get to stop, for this LWS (None: their own)."""


def ask(s: Situation) -> Ask:
    problems = node_problems(s.groups, s.nodes, s.healthy_nodes)
    reports: list[Report] = [(("node", p.pod_uid, p.node, p.state), p.event) for p in problems]
    request, invalid = failures.parse_request(s.annotations, s.history.handled_request)
    if invalid is not None:
        reports.append((("request", invalid), warning_event(REQUEST_INVALID, "Reconcile", invalid)))
    grace, bad_grace = failed_group_grace(s.annotations, s.failed_group_grace)
    if bad_grace is not None:
        reports.append((("grace", bad_grace), warning_event(GRACE_INVALID, "Reconcile", bad_grace)))
    decided = failures.decide_failures(
        planned=s.planned,
        requests=failures.requested(request, s.groups),
        groups=s.groups,
        history=s.history,
        max_restarts=s.max_restarts,
        size=s.size,
        backoff=s.backoff,
        now=s.now,
    )
    evidence, reads = _evidence(decided, problems, s.limits)
    return Ask(
        decided=decided,
        reports=tuple(reports),
        evidence=evidence,
        reads=reads,
        handled_request=request.value if request is not None else s.history.handled_request,
        # A hair after the backoff ends, so the pass that comes finds it over.
        retry=None if decided.retry is None else decided.retry + 0.05,
        grace=grace,
    )


def _evidence(
    decided: FailureDecisions, problems: Sequence[NodeProblem], limits: Limits
) -> tuple[dict[int, Evidence], tuple[tuple[int, LogRequest], ...]]:
    """What failed in each group about to be recreated, and the log tails to read for it (none
    for a requested recreation, none on a node whose kubelet cannot answer)."""
    evidence: dict[int, Evidence] = {}
    reads: list[tuple[int, LogRequest]] = []
    unreachable = {p.pod: f"node {p.node} is {p.state}" for p in problems}
    for plan, trigger, _ in decided.recreate:
        nodes = tuple(p.text for p in problems if p.group == plan.index)
        if trigger == "requested":
            evidence[plan.index] = Evidence(nodes=nodes)
            continue
        found, requests = collect(plan.members, plan.culprit, limits, unreachable)
        evidence[plan.index] = Evidence(found, nodes)
        reads += [(plan.index, r) for r in requests]
    return evidence, tuple(reads)


def with_logs(
    a: Ask, results: Sequence[tuple[str | None, str]]
) -> tuple[dict[int, Evidence], dict[tuple[int, int], str]]:
    """Phase two's input: the evidence with each read's outcome, ``results`` in the order of
    ``a.reads`` as (the tail, or None and why not). A tail read goes to the history's logs,
    a failed read's reason onto its container's record."""
    evidence = dict(a.evidence)
    logs: dict[tuple[int, int], str] = {}
    for (index, req), (text, error) in zip(a.reads, results, strict=True):
        if text:
            logs[(index, req.index)] = text
            continue
        kept = list(evidence[index].failures)
        kept[req.index] = replace(kept[req.index], log_error=error)
        evidence[index] = replace(evidence[index], failures=tuple(kept))
    return evidence, logs


@dataclass(frozen=True)
class Recording:
    """Phase two: the history's write (None when nothing changes), the History it leaves,
    and the events of the records."""

    write: HistoryWrite | None
    history: History
    events: tuple[Event, ...]


def record(
    s: Situation,
    a: Ask,
    evidence: Mapping[int, Evidence],
    logs: Mapping[tuple[int, int], str],
    *,
    lws_name: str,
    namespace: str,
    lws_uid: str,
) -> Recording:
    recorded = failures.record(
        s.history,
        a.decided,
        evidence=evidence,
        logs=logs,
        backoff=s.backoff,
        group_count=len(s.groups),
        now=s.now,
    )
    write, new = plan_write(
        s.history,
        recorded.groups,
        logs=recorded.logs,
        handled_request=a.handled_request,
        lws_name=lws_name,
        namespace=namespace,
        lws_uid=lws_uid,
        limits=s.limits,
    )
    return Recording(write, new, recorded.events)


def decides_nothing(d: FailureDecisions) -> bool:
    """Nothing recreated, waiting, exhausted, recovered or ready: the write then follows from
    the history alone (and bounding it encodes every record: each pass at rest would)."""
    return not (d.recreate or d.redo or d.exhausted or d.waiting or d.recovered or d.ready)


def record_key(s: Situation, a: Ask) -> tuple[object, ...]:
    """What :func:`record` reads when :func:`decides_nothing`: its memo key."""
    h = s.history
    return (h.resource_version, h.exists, len(s.groups), a.handled_request, s.limits)


def history_report(history: History) -> Report | None:
    """A ConfigMap of the history's name that is not ours: reported, never written."""
    return None if history.owned else (("history", history.name), not_owned(history.name))


def deletion(a: Ask, plan: Recreate) -> tuple[Write, ...]:
    """The deletion of ``plan``'s group (plan/lws/restart.group_deletion). A failed group's
    pods get the failed-group grace: once one member has failed the collective is broken, and
    the others' graceful stop serves nothing but delays the new group. A requested recreation
    gives each pod its own, as a rollout, a scale-down or a user's deletion does."""
    grace = None if plan.why == "requested" else a.grace
    return group_deletion(plan.leader, plan.workers, plan.members, grace=grace)


def to_recreate(a: Ask) -> tuple[Recreate, ...]:
    """The groups to delete, after the history is written: those recorded again (their
    deletion did not happen) and those recorded now."""
    return (*a.decided.redo, *(p for p, _, _ in a.decided.recreate))
