"""``kubectl lws status|plan`` for DisaggregatedSets (``kubectl lws status
disaggregatedset/NAME``, or NAME when no LeaderWorkerSet has it).

* ``status``: the set's revision, slices and conditions; one row per child LeaderWorkerSet
  (role, slice, revision, groups wanted, ready, updated, its private Service); then each
  child's groups, as ``kubectl lws status`` shows a LeaderWorkerSet's.
* ``plan -f new.yaml``: per slice, the rollout steps the operator would take to go from the
  children in the cluster to ``new.yaml`` (defaulted by a server-side dry run): replicas per
  role on the old revisions and on the new one at each step, from the operator's own planner
  (:mod:`lws_operator.plan.ds.rollout`), each step taken as soon as the previous is ready.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any

from lws_operator.api import constants as lc
from lws_operator.api import ds_constants as c
from lws_operator.api.ds_models import DisaggregatedSet
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_operator.kubectl.common import dry_run_update, events_of, nodes_of, status_rows
from lws_operator.plan.ds import rollout
from lws_operator.plan.ds.objects import Child, child_of, service_name
from lws_operator.plan.ds.revision import compute_revision
from lws_operator.plan.lws.rollout_sim import format_table
from lws_operator.plan.meta import labels_of, uid_of

Obj = Mapping[str, Any]


def ds_path(ns: str, name: str | None = None) -> str:
    return resource_path(c.API_VERSION, c.PLURAL, namespace=ns, name=name)


def _conditions(ds: Obj) -> str:
    true = [
        str(cond.get("type"))
        for cond in (ds.get("status") or {}).get("conditions") or []
        if cond.get("status") == "True"
    ]
    return ", ".join(true) or "no conditions yet"


def _order(ds: DisaggregatedSet, revision: str) -> Any:
    roles = [r.name for r in ds.spec.roles]

    def key(ch: Child) -> tuple[int, int, int, str]:
        index = roles.index(ch.role) if ch.role in roles else len(roles)
        return (ch.slice_index, ch.revision != revision, index, ch.name)

    return key


def children_rows(
    ds: DisaggregatedSet, children: Sequence[Child], services: set[str], revision: str
) -> list[list[str]]:
    """One row per child LeaderWorkerSet (header first). Pure."""
    rows = [["ROLE", "SLICE", "REVISION", "LWS", "GROUPS", "READY", "UPDATED", "SERVICE"]]
    for ch in sorted(children, key=_order(ds, revision)):
        current = " (current)" if ch.revision == revision else ""
        svc = service_name(ch.name)
        rows.append(
            [
                ch.role,
                str(ch.slice_index) + ("" if ch.slice is not None else " (unlabelled)"),
                ch.revision + current,
                ch.name,
                str(ch.replicas),
                str(ch.ready),
                str(ch.updated),
                svc if svc in services else "-",
            ]
        )
    return rows


def status_text(
    body: Obj,
    lws: Sequence[Obj],
    pods: Mapping[str, Sequence[dict[str, Any]]],
    events: Mapping[str, Sequence[dict[str, Any]]],
    services: set[str],
    nodes: dict[str, dict[str, Any] | None],
    now: datetime.datetime,
) -> str:
    """All of ``kubectl lws status`` for a set. Pure: ``pods`` and ``events`` by child."""
    ds = DisaggregatedSet.model_validate(body)
    revision = compute_revision((body.get("spec") or {}).get("roles") or [])
    children = [ch for ch in (child_of(o, ds.uid) for o in lws) if ch is not None]
    policy = ds.spec.placement_policy
    topology = policy.topology if policy is not None and policy.type != "None" else None
    head = (
        f"{ds.namespace}/{ds.name}: revision {revision}, {ds.spec.slices} slice"
        f"{'s' if ds.spec.slices != 1 else ''}, {_conditions(body)}"
        + (f", placement {policy.type} on {policy.topology}" if topology and policy else "")
        + "\n"
    )
    out = head + format_table(children_rows(ds, children, services, revision))
    by_name = {str(o["metadata"]["name"]): o for o in lws}
    for ch in sorted(children, key=_order(ds, revision)):
        lws_obj, mine = dict(by_name[ch.name]), pods.get(ch.name, [])
        rows = status_rows(lws_obj, mine, events.get(ch.name, []), nodes, now, topology=topology)
        table = format_table(rows)
        out += f"\n{ch.name}:\n" + "".join(f"  {line}\n" for line in table.splitlines())
    return out


def plan_text(current: Obj, new: Obj, lws: Sequence[Obj]) -> str:
    """The rollout ``current`` -> ``new`` (both as stored), per slice. Pure."""
    ds_new = DisaggregatedSet.model_validate(new)
    old_rev = compute_revision((current.get("spec") or {}).get("roles") or [])
    new_rev = compute_revision((new.get("spec") or {}).get("roles") or [])
    uid = uid_of(current)
    children = [ch for ch in (child_of(o, uid) for o in lws) if ch is not None]
    roles = [r.name for r in ds_new.spec.roles]
    removed = sorted({ch.role for ch in children} - set(roles))
    names = [*roles, *removed]
    if old_rev != new_rev:
        change = f"revision {old_rev} -> {new_rev}"
    else:
        change = f"no template change (revision {old_rev})"
    out = f"{ds_new.namespace}/{ds_new.name}: {change}\n"
    for s in range(ds_new.spec.slices):
        mine = [ch for ch in children if ch.slice_index == s]
        old = [ch for ch in mine if ch.revision != new_rev]
        newer = {ch.role: ch.replicas for ch in mine if ch.revision == new_rev}
        target = tuple(_desired(ds_new, r) if r in roles else 0 for r in names)
        budgets = [_budget(ds_new, r) for r in names]
        start_old = tuple(sum(ch.replicas for ch in old if ch.role == r) for r in names)
        start_new = tuple(newer.get(r, 0) for r in names)
        steps = rollout.all_steps(start_old, target, budgets, old=start_old, new=start_new)
        header = ["STEP", *(f"{r} old/new" for r in names)]
        rows = [header] + [
            [str(i), *(f"{o}/{n}" for o, n in zip(step.old, step.new, strict=True))]
            for i, step in enumerate(steps)
        ]
        what = "no rollout" if len(steps) == 1 and not old else f"{len(steps) - 1} steps"
        out += f"\nslice {s}: {what}\n" + format_table(rows)
    return out


def _desired(ds: DisaggregatedSet, role: str) -> int:
    spec_role = next(r for r in ds.spec.roles if r.name == role)
    return spec_role.spec.replicas


def _budget(ds: DisaggregatedSet, role: str) -> rollout.Budget:
    spec_role = next((r for r in ds.spec.roles if r.name == role), None)
    strategy = spec_role.spec.rollout_strategy if spec_role is not None else None
    ruc = strategy.rolling_update_configuration if strategy is not None else None
    if spec_role is None or ruc is None:
        return rollout.DEFAULT
    return rollout.role_budget(ruc.max_surge, ruc.max_unavailable, spec_role.spec.replicas)


async def _children(kube: Kube, ns: str, name: str) -> list[dict[str, Any]]:
    listing = await kube.list(
        resource_path(lc.API_VERSION, lc.PLURAL, namespace=ns),
        label_selector=f"{c.SET_NAME_LABEL}={name}",
    )
    return list(listing.get("items") or [])


async def cmd_status(kube: Kube, ns: str, name: str) -> str:
    body = await kube.get(ds_path(ns, name))
    lws = await _children(kube, ns, name)
    pods: dict[str, list[dict[str, Any]]] = {}
    all_pods = await kube.list(
        resource_path("v1", "pods", namespace=ns), label_selector=f"{c.SET_NAME_LABEL}={name}"
    )
    for pod in all_pods.get("items") or []:
        pods.setdefault(labels_of(pod).get(lc.SET_NAME_LABEL, ""), []).append(pod)
    events = {
        str(o["metadata"]["name"]): await events_of(kube, ns, o["metadata"]["name"]) for o in lws
    }
    svc_list = await kube.list(
        resource_path("v1", "services", namespace=ns), label_selector=f"{c.SET_NAME_LABEL}={name}"
    )
    services = {str(s["metadata"]["name"]) for s in svc_list.get("items") or []}
    policy = (body.get("spec") or {}).get("placementPolicy") or {}
    placed = policy.get("type") not in (None, "None") and policy.get("topology")
    nodes = await nodes_of(kube, list(all_pods.get("items") or [])) if placed else {}
    now = datetime.datetime.now(datetime.UTC)
    return status_text(body, lws, pods, events, services, nodes, now)


async def cmd_plan(kube: Kube, ns: str, name: str, new: dict[str, Any]) -> str:
    current, defaulted = await dry_run_update(kube, ds_path(ns, name), ns, name, new)
    return plan_text(current, defaulted, await _children(kube, ns, name))
