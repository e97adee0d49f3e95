"""What both halves of ``kubectl lws`` use: a LeaderWorkerSet's group table (``status_rows``,
also each child's table in a DisaggregatedSet's status) and the reads it is built from, the
events of an object and the nodes its pods run on.

Neither :mod:`lws_operator.kubectl.lws` nor :mod:`lws_operator.kubectl.ds` imports the other;
both import this module, and :mod:`lws_operator.kubectl.cli` dispatches to them.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

from lws_operator import kueue
from lws_operator.api import constants as c
from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.paths import resource_path
from lws_operator.plan.meta import (
    annotations_of,
    creation_timestamp_of,
    labels_of,
    name_of,
    pod_ready,
)
from lws_operator.plan.timestamps import parse_time

RECREATE_REASON = "RecreateGroup"


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
        if when := parse_time(event.get(key)):
            return when
    return parse_time(creation_timestamp_of(event))


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
    topology = topology or annotations_of(lws).get(c.EXCLUSIVE_KEY_ANNOTATION)
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
            age(parse_time(creation_timestamp_of(leader)), now),
            node_name or "-",
            domain,
            f"{recreated[0]} ({age(recreated[1], now)} ago)" if recreated else "-",
        ]
        if workloads is not None:
            wl = workloads.get(i)
            row[-1:-1] = [name_of(wl) or "-", kueue.workload_state(wl)]
        rows.append(row)
    return rows


async def events_of(kube: Kube, ns: str, name: str) -> list[dict[str, Any]]:
    path = resource_path("events.k8s.io/v1", "events", namespace=ns)
    listing = await kube.list(path, field_selector=f"regarding.name={name}")
    return [
        e
        for e in listing.get("items", [])
        if (e.get("regarding") or {}).get("kind") == c.KIND
        and (e.get("regarding") or {}).get("name") == name
    ]


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


async def dry_run_update(
    kube: Kube, path: str, ns: str, name: str, new: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The object as stored, and ``new`` as the API server would store it over that (defaulted
    and validated exactly as on apply, nothing stored: a dry-run update)."""
    current = await kube.get(path)
    new.setdefault("metadata", {}).update(
        name=name, namespace=ns, resourceVersion=current["metadata"]["resourceVersion"]
    )
    query: dict[str, str | int | bool] = {"dryRun": "All", "fieldManager": "kubectl"}
    defaulted = await kube.request("PUT", path, body=new, query=query)
    return current, defaulted
