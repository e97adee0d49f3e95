"""``kubectl lws``: a kubectl plugin (the ``kubectl-lws`` command, installed with the package).

* ``kubectl lws status NAME [-n NS]``: one row per group: index, revision, leader and worker
  readiness, container restarts, age, node and topology domain, and the last recreation (from
  the ``RecreateGroup`` events); then the groups being moved off nodes by evictions, and why.
* ``kubectl lws status`` then lists, per group, what failure handling knows: a crash loop's
  backoff ("group 3: crash loop, next recreation in 40 s"), a group Failed with its restart
  budget spent, pods on nodes that are NotReady or unreachable, and the last recreations with
  what failed (from the history ConfigMap ``<lws>-restart-history``, plan/history.py).
* ``kubectl lws logs NAME GROUP [-n NS]``: the log tails kept of the group's failed
  containers, recreation by recreation.
* ``kubectl lws recreate NAME GROUP... [-n NS]``: ask the operator to recreate groups now
  (annotation ``lws-operator.x-k8s.io/recreate-groups``), whatever their backoff or budget.
* ``kubectl lws plan NAME -f new.yaml [-n NS]``: the rollout steps the operator would take
  to go from the LeaderWorkerSet in the cluster to ``new.yaml`` (validated and defaulted by a
  server-side dry run), from the operator's own planner
  (:mod:`lws_operator.plan.rollout_sim`).
* The same for DisaggregatedSets (:mod:`lws_operator.kubectl_ds`): ``status
  disaggregatedset/NAME`` (or a NAME that is no LeaderWorkerSet), and ``plan`` with a
  DisaggregatedSet in ``new.yaml``.

With Kueue managing the LeaderWorkerSet (its Workload API served, and the LWS queued or with
Workloads), ``status`` adds each group's Workload and its state, and ``plan`` the quota the
surge groups need against the ClusterQueue's free quota (:mod:`lws_operator.kueue`). Without
Kueue both print what they always did.

Credentials and namespace as kubectl's: ``--kubeconfig``, else ``$KUBECONFIG``, else
``~/.kube/config``; the namespace of the current context unless ``-n`` is given.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import math
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from lws_operator import kueue
from lws_operator.api import constants as c
from lws_operator.api import ds_constants as dc
from lws_operator.api.models import LeaderWorkerSet
from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.paths import resource_path
from lws_operator.plan import disruption
from lws_operator.plan import revision as rev
from lws_operator.plan.gang import min_resources
from lws_operator.plan.groups import observe_groups
from lws_operator.plan.history import History, parse_history, parse_time, project_history
from lws_operator.plan.history import history_name as _history_name
from lws_operator.plan.meta import labels_of, pod_ready, uid_of
from lws_operator.plan.nodehealth import node_state
from lws_operator.plan.rollout_sim import format_steps, format_table, simulate_rollout

RECREATE_REASON = "RecreateGroup"


def _kubeconfig_path(explicit: Path | None) -> Path:
    if explicit is not None:
        return explicit
    env = os.environ.get("KUBECONFIG", "")
    first = next((p for p in env.split(os.pathsep) if p), None)
    return Path(first) if first else Path.home() / ".kube" / "config"


def context_namespace(kubeconfig: Path) -> str:
    """The namespace of the kubeconfig's current context, or ``default``."""
    try:
        cfg = yaml.safe_load(kubeconfig.read_text()) or {}
    except (OSError, yaml.YAMLError):
        return "default"
    current = cfg.get("current-context")
    for ctx in cfg.get("contexts") or []:
        if ctx.get("name") == current:
            return str((ctx.get("context") or {}).get("namespace") or "default")
    return "default"


def _parse_time(value: str | None) -> datetime.datetime | None:
    if not value:
        return None
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def age(since: datetime.datetime | None, now: datetime.datetime) -> str:
    """kubectl's short durations: 42s, 5m, 3h, 2d."""
    if since is None:
        return "-"
    seconds = max(0, int((now - since).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size * (2 if unit != "m" else 1):
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _event_time(event: dict[str, Any]) -> datetime.datetime | None:
    for key in ("eventTime", "deprecatedLastTimestamp", "lastTimestamp"):
        if when := _parse_time(event.get(key)):
            return when
    return _parse_time((event.get("metadata") or {}).get("creationTimestamp"))


def last_recreations(
    events: Sequence[dict[str, Any]],
) -> dict[int, tuple[str, datetime.datetime | None]]:
    """Group index → (why, when) of its latest ``RecreateGroup`` event. The note reads
    "<Role> pod <pod> failed, deleted leader pod <leader> to recreate group <i>"."""
    latest: dict[int, tuple[str, datetime.datetime | None]] = {}
    for event in events:
        if event.get("reason") != RECREATE_REASON:
            continue
        note = str(event.get("note") or event.get("message") or "")
        head, _, tail = note.rpartition("recreate group ")
        if not tail.strip().isdigit():
            continue
        index, when = int(tail), _event_time(event)
        why = head.split(",")[0].strip() or note
        previous = latest.get(index)
        if previous is None or (when and (previous[1] is None or when >= previous[1])):
            latest[index] = (why, when)
    return latest


def status_rows(
    lws: dict[str, Any],
    pods: Sequence[dict[str, Any]],
    events: Sequence[dict[str, Any]],
    nodes: dict[str, dict[str, Any] | None],
    now: datetime.datetime,
    workloads: dict[int, dict[str, Any]] | None = None,
    topology: str | None = None,
) -> list[list[str]]:
    """The ``status`` table (header first). Pure: everything is passed in. ``workloads``
    (Kueue's, by group index; None without Kueue) adds the WORKLOAD and KUEUE columns. The
    DOMAIN column shows the ``topology`` node label (by default the exclusive-topology
    annotation's)."""
    name = lws["metadata"]["name"]
    spec = lws.get("spec") or {}
    size = int((spec.get("leaderWorkerTemplate") or {}).get("size") or 1)
    topology = topology or ((lws.get("metadata") or {}).get("annotations") or {}).get(
        c.EXCLUSIVE_KEY_ANNOTATION
    )
    by_group: dict[int, list[dict[str, Any]]] = {}
    for pod in pods:
        index = labels_of(pod).get(c.GROUP_INDEX_LABEL)
        if index is not None and index.isdigit():
            by_group.setdefault(int(index), []).append(pod)
    recreations = last_recreations(events)
    indices = sorted(set(range(int(spec.get("replicas") or 0))) | set(by_group))
    header = [
        "GROUP",
        "REVISION",
        "LEADER",
        "WORKERS",
        "RESTARTS",
        "AGE",
        "NODE",
        "DOMAIN",
        "LAST RECREATION",
    ]
    if workloads is not None:
        indices = sorted(set(indices) | set(workloads))
        header[-1:-1] = ["WORKLOAD", "KUEUE"]
    rows = [header]
    for i in indices:
        members = by_group.get(i, [])
        leader = next((p for p in members if p["metadata"]["name"] == f"{name}-{i}"), None)
        workers = [p for p in members if p is not leader]
        restarts = sum(
            int(s.get("restartCount") or 0)
            for p in members
            for s in (p.get("status") or {}).get("containerStatuses") or []
        )
        node_name = ((leader or {}).get("spec") or {}).get("nodeName")
        domain = "-"
        if topology and node_name:
            node = nodes.get(node_name)
            domain = "?" if node is None else labels_of(node).get(topology, "?")
        recreated = recreations.get(i)
        row = [
            str(i),
            labels_of(leader).get(c.REVISION_KEY, "-") if leader else "-",
            ("1/1" if pod_ready(leader) else "0/1") if leader else "0/1 (missing)",
            f"{sum(1 for w in workers if pod_ready(w))}/{size - 1}",
            str(restarts),
            age(_parse_time((leader or {}).get("metadata", {}).get("creationTimestamp")), now),
            node_name or "-",
            domain,
            f"{recreated[0]} ({age(recreated[1], now)} ago)" if recreated else "-",
        ]
        if workloads is not None:
            wl = workloads.get(i)
            name_of = ((wl or {}).get("metadata") or {}).get("name") or "-"
            row[-1:-1] = [name_of, kueue.workload_state(wl)]
        rows.append(row)
    return rows


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
    lws = await kube.get(_lws_path(ns, name))
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
    await kube.patch(_lws_path(ns, name), patch)
    which = ", ".join(str(g) for g in sorted(set(groups)))
    return f"{ns}/{name}: asked the operator to recreate group(s) {which} now ({value})\n"


def _lws_path(ns: str, name: str | None = None) -> str:
    return resource_path(c.API_VERSION, c.PLURAL, namespace=ns, name=name)


async def events_of(kube: Kube, ns: str, name: str) -> list[dict[str, Any]]:
    path = resource_path("events.k8s.io/v1", "events", namespace=ns)
    listing = await kube.list(path, field_selector=f"regarding.name={name}")
    return [
        e
        for e in listing.get("items", [])
        if (e.get("regarding") or {}).get("kind") == c.KIND
        and (e.get("regarding") or {}).get("name") == name
    ]


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


async def nodes_of(
    kube: Kube, pods: Sequence[dict[str, Any]], unreadable: set[str] | None = None
) -> dict[str, dict[str, Any] | None]:
    """The nodes the pods run on, by name (None: gone, or not readable, shown as "?"; the
    names of those not readable are added to ``unreadable``)."""
    nodes: dict[str, dict[str, Any] | None] = {}
    for node_name in {(p.get("spec") or {}).get("nodeName") for p in pods} - {None}:
        try:
            nodes[str(node_name)] = await kube.get_or_none(
                resource_path("v1", "nodes", name=str(node_name))
            )
        except ApiError:
            nodes[str(node_name)] = None  # not allowed to read nodes: "?"
            if unreadable is not None:
                unreadable.add(str(node_name))
    return nodes


async def cmd_status(kube: Kube, ns: str, name: str) -> str:
    lws = await kube.get(_lws_path(ns, name))
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
    """The groups being moved off nodes (evictions, plan/disruption.py), and why."""
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


def _load_new(path: str) -> dict[str, Any]:
    text = sys.stdin.read() if path == "-" else Path(path).read_text()
    for doc in yaml.safe_load_all(text):
        if isinstance(doc, dict) and doc.get("kind") in (c.KIND, dc.KIND):
            return doc
    raise SystemExit(f"kubectl-lws: {path}: no {c.KIND} or {dc.KIND} found")


async def cmd_plan(kube: Kube, ns: str, name: str, new_file: str) -> str:
    new = _load_new(new_file)
    if new.get("kind") == dc.KIND:
        from lws_operator import kubectl_ds

        return await kubectl_ds.cmd_plan(kube, ns, name, new)
    current = await kube.get(_lws_path(ns, name))
    new.setdefault("metadata", {}).update(
        name=name, namespace=ns, resourceVersion=current["metadata"]["resourceVersion"]
    )
    # The API server defaults and validates it exactly as it would on apply (nothing stored).
    defaulted = await kube.request(
        "PUT", _lws_path(ns, name), body=new, query={"dryRun": "All", "fieldManager": "kubectl"}
    )
    old_spec = LeaderWorkerSet.model_validate(current).spec
    new_spec = LeaderWorkerSet.model_validate(defaulted).spec
    sts = await kube.get_or_none(resource_path("apps/v1", "statefulsets", namespace=ns, name=name))
    if sts is None:
        return f"{ns}/{name}: no leader StatefulSet yet; the operator creates all groups at once\n"
    size = old_spec.leader_worker_template.size
    key = labels_of(sts).get(c.REVISION_KEY, "")
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kubectl lws",
        description="Inspect LeaderWorkerSets group by group, and DisaggregatedSets child by "
        "child.",
    )
    parser.add_argument("--kubeconfig", type=Path, default=None)
    parser.add_argument("-n", "--namespace", default=None)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    status = sub.add_parser(
        "status",
        help="one row per group of a LeaderWorkerSet, or per child of a DisaggregatedSet",
    )
    status.add_argument(
        "name", help="NAME, lws/NAME or disaggregatedset/NAME (NAME: an LWS, else a set)"
    )
    plan = sub.add_parser("plan", help="the rollout steps a change would take")
    plan.add_argument("name")
    plan.add_argument(
        "-f",
        "--filename",
        required=True,
        help="the new LeaderWorkerSet or DisaggregatedSet (- stdin)",
    )
    logs = sub.add_parser("logs", help="the log tails kept of a group's failed containers")
    logs.add_argument("name")
    logs.add_argument("group", type=int)
    recreate = sub.add_parser("recreate", help="ask the operator to recreate groups now")
    recreate.add_argument("name")
    recreate.add_argument("groups", type=int, nargs="+", metavar="GROUP")
    for p in (status, plan, logs, recreate):
        p.add_argument("--kubeconfig", type=Path, default=argparse.SUPPRESS)
        p.add_argument("-n", "--namespace", default=argparse.SUPPRESS)
    return parser


async def _run(args: argparse.Namespace) -> str:
    kubeconfig = _kubeconfig_path(args.kubeconfig)
    ns = args.namespace or context_namespace(kubeconfig)
    kube = await Kube.connect(kubeconfig, user_agent="kubectl-lws")
    try:
        kind, _, name = args.name.rpartition("/")
        if args.command == "status":
            return await _status(kube, ns, kind, name)
        if args.command == "logs":
            return await cmd_logs(kube, ns, args.name, args.group)
        if args.command == "recreate":
            return await cmd_recreate(kube, ns, args.name, args.groups)
        return await cmd_plan(kube, ns, name, args.filename)
    finally:
        await kube.close()


_LWS_NAMES = ("", "lws", "leaderworkerset", "leaderworkersets", f"{c.PLURAL}.{c.GROUP}")
_DS_NAMES = (dc.SINGULAR, dc.PLURAL, f"{dc.PLURAL}.{dc.GROUP}")


async def _status(kube: Kube, ns: str, kind: str, name: str) -> str:
    """A LeaderWorkerSet's groups, or a DisaggregatedSet's children (by ``kind``, or a bare
    NAME that is no LeaderWorkerSet)."""
    from lws_operator import kubectl_ds

    if kind not in _LWS_NAMES + _DS_NAMES:
        raise SystemExit(f"kubectl-lws: unknown kind {kind!r}: lws or disaggregatedset")
    if kind in _DS_NAMES or (
        not kind
        and await kube.get_or_none(_lws_path(ns, name)) is None
        and await kube.get_or_none(kubectl_ds.ds_path(ns, name)) is not None
    ):
        return await kubectl_ds.cmd_status(kube, ns, name)
    return await cmd_status(kube, ns, name)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        sys.stdout.write(asyncio.run(_run(args)))
    except ApiError as e:
        print(f"kubectl-lws: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
