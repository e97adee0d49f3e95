"""``kubectl lws``: a kubectl plugin (the ``kubectl-lws`` command, installed with the package).

* ``kubectl lws status NAME [-n NS]``: one row per group: index, revision, leader and worker
  readiness, container restarts, age, node and topology domain, and the last recreation (from
  the ``RecreateGroup`` events).
* ``kubectl lws plan NAME -f new.yaml [-n NS]``: the rollout steps the operator would take
  to go from the LeaderWorkerSet in the cluster to ``new.yaml`` (validated and defaulted by a
  server-side dry run), from the operator's own planner
  (:mod:`lws_operator.plan.rollout_sim`).
* The same for DisaggregatedSets (:mod:`lws_operator.kubectl_ds`): ``status
  disaggregatedset/NAME`` (or a NAME that is no LeaderWorkerSet), and ``plan`` with a
  DisaggregatedSet in ``new.yaml``.

Credentials and namespace as kubectl's: ``--kubeconfig``, else ``$KUBECONFIG``, else
``~/.kube/config``; the namespace of the current context unless ``-n`` is given.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from lws_operator.api import constants as c
from lws_operator.api import ds_constants as dc
from lws_operator.api.models import LeaderWorkerSet
from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.paths import resource_path
from lws_operator.plan import revision as rev
from lws_operator.plan.groups import observe_groups
from lws_operator.plan.meta import labels_of, pod_ready
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
    topology: str | None = None,
) -> list[list[str]]:
    """The ``status`` table (header first). Pure: everything is passed in. The DOMAIN column
    shows the ``topology`` node label (by default the exclusive-topology annotation's)."""
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
    rows = [
        [
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
    ]
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
        rows.append(
            [
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
        )
    return rows


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


async def nodes_of(kube: Kube, pods: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any] | None]:
    """The nodes the pods run on, by name (None: not readable, shown as "?")."""
    nodes: dict[str, dict[str, Any] | None] = {}
    for node_name in {(p.get("spec") or {}).get("nodeName") for p in pods} - {None}:
        try:
            nodes[str(node_name)] = await kube.get_or_none(
                resource_path("v1", "nodes", name=str(node_name))
            )
        except ApiError:
            nodes[str(node_name)] = None  # not allowed to read nodes: "?"
    return nodes


async def cmd_status(kube: Kube, ns: str, name: str) -> str:
    lws = await kube.get(_lws_path(ns, name))
    pods = (
        await kube.list(
            resource_path("v1", "pods", namespace=ns), label_selector=f"{c.SET_NAME_LABEL}={name}"
        )
    ).get("items", [])
    events = await events_of(kube, ns, name)
    nodes: dict[str, dict[str, Any] | None] = {}
    if (lws.get("metadata") or {}).get("annotations", {}).get(c.EXCLUSIVE_KEY_ANNOTATION):
        nodes = await nodes_of(kube, pods)
    status = lws.get("status") or {}
    head = (
        f"{ns}/{name}: {status.get('readyReplicas', 0)}/{lws['spec'].get('replicas')} groups "
        f"ready, {status.get('updatedReplicas', 0)} updated, size "
        f"{lws['spec']['leaderWorkerTemplate'].get('size')}\n"
    )
    now = datetime.datetime.now(datetime.UTC)
    return head + format_table(status_rows(lws, pods, events, nodes, now))


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
    return head + format_steps(steps)


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
    for p in (status, plan):
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
