"""The LeaderWorkerSet half of ``kubectl lws`` (the command line: :mod:`lws_operator.kubectl.cli`).

* ``kubectl lws status NAME [-n NS]``: one row per group: index, revision, leader and worker
  readiness, container restarts, age, node and topology domain, and the last recreation (from
  the ``RecreateGroup`` events); then the groups being moved off nodes by evictions, and why.
* ``kubectl lws status`` then lists, per group, what failure handling knows: a crash loop's
  backoff ("group 3: crash loop, next recreation in 40 s"), a group Failed with its restart
  budget spent, pods on nodes that are NotReady or unreachable, and the last recreations with
  what failed (from the history ConfigMap ``<lws>-restart-history``, plan/lws/history.py).
* ``kubectl lws logs NAME GROUP [-n NS]``: the log tails kept of the group's failed
  containers, recreation by recreation.
* ``kubectl lws recreate NAME GROUP... [-n NS]``: ask the operator to recreate groups now
  (annotation ``lws-operator.x-k8s.io/recreate-groups``), whatever their backoff or budget.
* ``kubectl lws plan NAME -f new.yaml [-n NS]``: the rollout steps the operator would take
  to go from the LeaderWorkerSet in the cluster to ``new.yaml`` (validated and defaulted by a
  server-side dry run), from the operator's own planner
  (:mod:`lws_operator.plan.lws.rollout_sim`).

With Kueue managing the LeaderWorkerSet (its Workload API served, and the LWS queued or with
Workloads), ``status`` adds each group's Workload and its state, and ``plan`` the quota the
surge groups need against the ClusterQueue's free quota (:mod:`lws_operator.kueue`). Without
Kueue both print what they always did.

The group table (``status_rows``) and the reads of events and nodes are in
:mod:`lws_operator.kubectl.common`, which the DisaggregatedSet half uses too.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Mapping, Sequence
from typing import Any

from lws_operator import kueue
from lws_operator.api import constants as c
from lws_operator.api.models import LeaderWorkerSet
from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.paths import resource_path
from lws_operator.kubectl.common import age, dry_run_update, events_of, nodes_of, status_rows
from lws_operator.plan.keys import RevisionKey
from lws_operator.plan.lws import disruption
from lws_operator.plan.lws import revision as rev
from lws_operator.plan.lws.gang import min_resources
from lws_operator.plan.lws.groups import observe_groups
from lws_operator.plan.lws.history import History, parse_history, project_history
from lws_operator.plan.lws.history import history_name as _history_name
from lws_operator.plan.lws.nodehealth import node_state
from lws_operator.plan.lws.rollout_sim import format_steps, format_table, simulate_rollout
from lws_operator.plan.meta import labels_of, uid_of
from lws_operator.plan.timestamps import parse_time

# ---- failure handling (issue 16) ----------------------------------------------------------

RECREATIONS_SHOWN = 5


def failure_lines(
    lws: dict[str, Any],
    pods: Sequence[dict[str, Any]],
    history: History,
    nodes: Mapping[str, dict[str, Any] | None],
    now: datetime.datetime,
    shown: int = RECREATIONS_SHOWN,
) -> list[str]:
    """Per group: backoff, Failed, node problems, then its last ``shown`` recreations (what
    failed, when, after which backoff). Pure: everything is passed in."""
    name = lws["metadata"]["name"]
    limit = ((lws.get("spec") or {}).get("leaderWorkerTemplate") or {}).get("maxGroupRestarts")
    leaders = {
        p["metadata"]["name"]: p for p in pods if labels_of(p).get(c.WORKER_INDEX_LABEL) == "0"
    }
    lines = []
    for pod in sorted(pods, key=lambda p: p["metadata"]["name"]):
        node_name = (pod.get("spec") or {}).get("nodeName")
        if node_name and node_name in nodes:
            state = node_state(nodes[node_name])
            if state is not None:
                group = labels_of(pod).get(c.GROUP_INDEX_LABEL, "?")
                lines.append(
                    f"group {group}: pod {pod['metadata']['name']} on node {node_name}: {state}"
                )
    for index, g in sorted(history.groups.items()):
        leader_uid = uid_of(leaders.get(f"{name}-{index}"))
        budget = f"{g.restarts}" + (f" of maxGroupRestarts {limit}" if limit is not None else "")
        if g.failed_leader:
            lines.append(
                f"group {index}: Failed: failed again with {budget} recreations spent; not "
                "recreated, its pods are kept for inspection (kubectl lws recreate to retry)"
            )
        elif g.backoff_leader and g.backoff_leader == leader_uid:
            until = parse_time(g.backoff_until)
            left = 0 if until is None else max(0, math.ceil((until - now).total_seconds()))
            lines.append(f"group {index}: crash loop, next recreation in {left} s")
        recent = g.recreations[-shown:]
        if not recent:
            continue
        lines.append(
            f"group {index}: {g.total} recreations, {budget} counted by the budget; "
            f"last {len(recent)}:"
        )
        for r in reversed(recent):
            when = age(parse_time(r.at), now)
            waited = f", after a {r.waited:g} s backoff" if r.waited else ""
            what = "; ".join(f.summary() for f in r.failures[:2]) or f"pod {r.culprit}"
            logs = " [log kept]" if any(f.log for f in r.failures) else ""
            lines.append(f"  #{r.number} {when} ago ({r.trigger}{waited}): {what}{logs}")
            lines.extend(f"    {n}" for n in r.nodes)
    return lines


def log_sections(history_cm: dict[str, Any], group: int, lws_name: str, lws_uid: str) -> str:
    """The kept log tails of one group, oldest recreation first (``kubectl lws logs``)."""
    data = history_cm.get("data") or {}
    history = parse_history(project_history(history_cm), lws_name=lws_name, lws_uid=lws_uid)
    g = history.groups.get(group)
    if g is None or not g.recreations:
        return f"group {group}: no recreation recorded\n"
    out = []
    for r in g.recreations:
        out.append(f"=== group {group} recreation #{r.number} at {r.at} ({r.trigger})")
        for f in r.failures:
            out.append(f"--- {f.summary()}")
            if f.log and f.log in data:
                out.append(str(data[f.log]).rstrip("\n"))
            else:
                out.append(f"({f.log_error or 'no log tail kept'})")
    return "\n".join(out) + "\n"


async def _history_cm(kube: Kube, ns: str, name: str) -> dict[str, Any] | None:
    try:
        return await kube.get_or_none(
            resource_path("v1", "configmaps", namespace=ns, name=_history_name(name))
        )
    except ApiError as e:
        if e.status == 403:
            return None  # not allowed to read ConfigMaps here: shown without history
        raise


async def cmd_logs(kube: Kube, ns: str, name: str, group: int) -> str:
    lws = await kube.get(lws_path(ns, name))
    cm = await _history_cm(kube, ns, name)
    if cm is None:
        return f"{ns}/{name}: no restart history (ConfigMap {_history_name(name)})\n"
    return log_sections(cm, group, name, str(lws["metadata"].get("uid") or ""))


def request_value(groups: Sequence[int], token: str) -> str:
    return ",".join(str(g) for g in sorted(set(groups))) + f"@{token}"


async def cmd_recreate(kube: Kube, ns: str, name: str, groups: Sequence[int]) -> str:
    token = str(int(datetime.datetime.now(datetime.UTC).timestamp() * 1000))
    value = request_value(groups, token)
    patch = {"metadata": {"annotations": {c.RECREATE_GROUPS_ANNOTATION: value}}}
    await kube.patch(lws_path(ns, name), patch)
    which = ", ".join(str(g) for g in sorted(set(groups)))
    return f"{ns}/{name}: asked the operator to recreate group(s) {which} now ({value})\n"


def lws_path(ns: str, name: str | None = None) -> str:
    return resource_path(c.API_VERSION, c.PLURAL, namespace=ns, name=name)


async def _kueue_workloads(
    kube: Kube, ns: str, lws: dict[str, Any]
) -> dict[int, dict[str, Any]] | None:
    """The LWS's Workloads by group, or None when Kueue does not manage it: its Workload API
    not served (or not readable), or the LWS neither queued nor with a Workload."""
    try:
        listing = await kube.list(resource_path(kueue.API_VERSION, "workloads", namespace=ns))
    except ApiError as e:
        if e.status in (403, 404):
            return None
        raise
    found = kueue.group_workloads(listing.get("items", []), lws["metadata"].get("uid", ""))
    queued = kueue.QUEUE_LABEL in (lws["metadata"].get("labels") or {})
    return found if found or queued else None


async def cmd_status(kube: Kube, ns: str, name: str) -> str:
    lws = await kube.get(lws_path(ns, name))
    pods = (
        await kube.list(
            resource_path("v1", "pods", namespace=ns), label_selector=f"{c.SET_NAME_LABEL}={name}"
        )
    ).get("items", [])
    events = await events_of(kube, ns, name)
    unreadable: set[str] = set()
    # Every node of the pods: topology domains, and node health (issue 16).
    nodes = await nodes_of(kube, pods, unreadable)
    workloads = await _kueue_workloads(kube, ns, lws)
    status = lws.get("status") or {}
    head = (
        f"{ns}/{name}: {status.get('readyReplicas', 0)}/{lws['spec'].get('replicas')} groups "
        f"ready, {status.get('updatedReplicas', 0)} updated, size "
        f"{lws['spec']['leaderWorkerTemplate'].get('size')}\n"
    )
    now = datetime.datetime.now(datetime.UTC)
    table = format_table(status_rows(lws, pods, events, nodes, now, workloads))
    sts = await kube.get_or_none(resource_path("apps/v1", "statefulsets", namespace=ns, name=name))
    cm = await _history_cm(kube, ns, name)
    history = parse_history(
        None if cm is None else project_history(cm),
        lws_name=name,
        lws_uid=str(lws["metadata"].get("uid") or ""),
    )
    readable = {k: v for k, v in nodes.items() if k not in unreadable}
    lines = failure_lines(lws, pods, history, readable, now)
    # After a blank line, so the table stays one block for whatever parses it.
    failures = ("\n" if lines else "") + "".join(f"{line}\n" for line in lines)
    return head + table + moves_section(lws, sts, now) + failures


def moves_section(lws: dict[str, Any], sts: dict[str, Any] | None, now: datetime.datetime) -> str:
    """The groups being moved off nodes (evictions, plan/lws/disruption.py), and why."""
    moves = disruption.describe(disruption.read_state(sts), lws["metadata"]["name"], now)
    if not moves:
        return ""
    model = LeaderWorkerSet.model_validate(lws)
    cfg = model.spec.rollout_strategy.rolling_update_configuration
    b = disruption.budget(
        model.annotations, model.spec.replicas, cfg.max_unavailable, cfg.max_surge
    )
    head = f"groups being moved (disruption budget {b.groups} from {b.source}):\n"
    return head + "".join(f"  {line}\n" for line in moves)


async def cmd_plan(kube: Kube, ns: str, name: str, new: dict[str, Any]) -> str:
    current, defaulted = await dry_run_update(kube, lws_path(ns, name), ns, name, new)
    old_spec = LeaderWorkerSet.model_validate(current).spec
    new_spec = LeaderWorkerSet.model_validate(defaulted).spec
    sts = await kube.get_or_none(resource_path("apps/v1", "statefulsets", namespace=ns, name=name))
    if sts is None:
        return f"{ns}/{name}: no leader StatefulSet yet; the operator creates all groups at once\n"
    size = old_spec.leader_worker_template.size
    key = rev.revision_key_of(sts) or RevisionKey("")
    selector = f"{c.SET_NAME_LABEL}={name}"
    pods = await kube.list(resource_path("v1", "pods", namespace=ns), label_selector=selector)
    statefulsets = await kube.list(
        resource_path("apps/v1", "statefulsets", namespace=ns), label_selector=selector
    )
    sts_replicas = int((sts.get("spec") or {}).get("replicas") or 0)
    groups = observe_groups(
        lws_name=name,
        count=sts_replicas,
        leader_sts_uid=sts["metadata"].get("uid"),
        pods={p["metadata"]["name"]: p for p in pods.get("items", [])},
        statefulsets={s["metadata"]["name"]: s for s in statefulsets.get("items", [])},
    )
    rolling = ((sts.get("spec") or {}).get("updateStrategy") or {}).get("rollingUpdate") or {}
    steps = simulate_rollout(
        old_spec,
        new_spec,
        sts_replicas=sts_replicas,
        sts_partition=int(rolling.get("partition") or 0),
        states=[(g.ready(size), g.updated(size, key)) for g in groups],
    )
    old_key, new_key = rev.revision_key(old_spec), rev.revision_key(new_spec)
    change = (
        f"template revision {old_key} -> {new_key}"
        if old_key != new_key
        else f"no template change (revision {old_key})"
    )
    head = f"{ns}/{name}: {change}; replicas {old_spec.replicas} -> {new_spec.replicas}\n"
    out = head + format_steps(steps)
    if await _kueue_workloads(kube, ns, current) is not None:
        # Groups above replicas at any step after the current state: the surge groups.
        surge = max((s.replicas for s in steps[1:]), default=0) - new_spec.replicas
        cq_name, cq = await _cluster_queue(kube, ns, defaulted)
        lines = kueue.surge_quota_lines(min_resources(new_spec), surge, cq_name, cq)
        out += "\n".join(lines) + "\n"
    return out


async def _cluster_queue(
    kube: Kube, ns: str, lws: dict[str, Any]
) -> tuple[str | None, dict[str, Any] | None]:
    """The ClusterQueue behind the LWS's LocalQueue (name, object), as far as it is found."""
    queue = (lws["metadata"].get("labels") or {}).get(kueue.QUEUE_LABEL)
    if not queue:
        return None, None
    try:
        local = await kube.get_or_none(
            resource_path(kueue.API_VERSION, "localqueues", namespace=ns, name=queue)
        )
        cq_name = str(((local or {}).get("spec") or {}).get("clusterQueue") or "") or None
        if cq_name is None:
            return f"(LocalQueue {queue} not found)", None
        return cq_name, await kube.get_or_none(
            resource_path(kueue.API_VERSION, "clusterqueues", name=cq_name)
        )
    except ApiError as e:
        if e.status == 403:
            return None, None
        raise
