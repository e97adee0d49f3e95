"""Kueue's view of a LeaderWorkerSet, for ``kubectl lws``: each group's Workload and its state,
and a ClusterQueue's free quota. Pure (objects in, text out); nothing here talks to the cluster.

Kueue (v0.11 and later) makes one Workload per group, owned by the LeaderWorkerSet and
annotated with the group index (``kueue.x-k8s.io/component-workload-index``); the group's pods
wait behind the scheduling gate ``kueue.x-k8s.io/admission`` until it is admitted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lws_operator.plan.meta import meta_of
from lws_operator.plan.quantity import Quantity, add_all, parse

GROUP = "kueue.x-k8s.io"
API_VERSION = f"{GROUP}/v1beta2"
QUEUE_LABEL = f"{GROUP}/queue-name"
WORKLOAD_INDEX_ANNOTATION = f"{GROUP}/component-workload-index"
ADMISSION_GATE = f"{GROUP}/admission"


def group_workloads(workloads: Iterable[Mapping[str, Any]], lws_uid: str) -> dict[int, Any]:
    """The Workloads owned by the LeaderWorkerSet with ``lws_uid``, by group index."""
    out: dict[int, Any] = {}
    for wl in workloads:
        meta = meta_of(wl)
        index = str((meta.get("annotations") or {}).get(WORKLOAD_INDEX_ANNOTATION, ""))
        owned = any(r.get("uid") == lws_uid for r in meta.get("ownerReferences") or [])
        if owned and index.isdigit():
            out[int(index)] = wl
    return out


def _conditions(wl: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {c["type"]: c for c in (wl.get("status") or {}).get("conditions") or [] if "type" in c}


def _true(conds: Mapping[str, Mapping[str, Any]], type_: str) -> bool:
    return (conds.get(type_) or {}).get("status") == "True"


def _why(cond: Mapping[str, Any] | None) -> str:
    if not cond:
        return ""
    reason, message = cond.get("reason") or "", " ".join(str(cond.get("message") or "").split())
    return f"{reason}: {message}" if reason and message else reason or message


def workload_state(wl: Mapping[str, Any] | None) -> str:
    """One phrase: ``admitted``, ``pending (<Kueue's reason>)``, ``preempted (...)``,
    ``evicted (...)``, ``deactivated`` or ``finished``; ``-`` without a Workload."""
    if wl is None:
        return "-"
    conds = _conditions(wl)
    if _true(conds, "Finished"):
        return "finished"
    if (wl.get("spec") or {}).get("active") is False:
        return "deactivated"
    if _true(conds, "Admitted"):
        return "admitted"
    if _true(conds, "Preempted"):
        return f"preempted ({_why(conds.get('Preempted'))})"
    if _true(conds, "Evicted"):
        return f"evicted ({_why(conds.get('Evicted'))})"
    if _true(conds, "QuotaReserved"):
        return "quota reserved, waiting for admission checks"
    why = _why(conds.get("QuotaReserved"))
    return f"pending ({why})" if why else "pending"


def queue_of(wl: Mapping[str, Any] | None) -> str:
    if wl is None:
        return "-"
    admission = (wl.get("status") or {}).get("admission") or {}
    return str(admission.get("clusterQueue") or (wl.get("spec") or {}).get("queueName") or "-")


@dataclass(frozen=True)
class QuotaLine:
    resource: str
    nominal: Quantity
    reserved: Quantity

    @property
    def free(self) -> Quantity:
        return Quantity(max(0, self.nominal.nanos - self.reserved.nanos), self.nominal.format)


def cluster_queue_quota(cq: Mapping[str, Any]) -> dict[str, QuotaLine]:
    """Per resource: the nominal quota over all flavors and what admitted Workloads reserve
    (``status.flavorsReservation``). Borrowing from a cohort is not counted."""
    nominal: dict[str, Quantity] = {}
    for group in (cq.get("spec") or {}).get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            for res in flavor.get("resources") or []:
                nominal = add_all(nominal, {res["name"]: parse(res.get("nominalQuota", 0))})
    reserved: dict[str, Quantity] = {}
    for flavor in (cq.get("status") or {}).get("flavorsReservation") or []:
        for res in flavor.get("resources") or []:
            reserved = add_all(reserved, {res["name"]: parse(res.get("total", 0))})
    return {
        name: QuotaLine(name, q, reserved.get(name, Quantity(0, q.format)))
        for name, q in sorted(nominal.items())
    }


def times(requests: Mapping[str, str], n: int) -> dict[str, Quantity]:
    total: dict[str, Quantity] = {}
    for _ in range(n):
        total = add_all(total, {k: parse(v) for k, v in requests.items()})
    return total


def surge_quota_lines(
    group_requests: Mapping[str, str],
    surge_groups: int,
    cq_name: str | None,
    cq: Mapping[str, Any] | None,
) -> list[str]:
    """What ``kubectl lws plan`` prints about quota for a rollout with ``surge_groups`` extra
    groups, each needing ``group_requests``, against the ClusterQueue ``cq`` (None: unknown)."""
    if surge_groups <= 0:
        return ["Kueue: no surge group, so no quota beyond what the groups hold"]
    need = times(group_requests, surge_groups)
    lines = [
        f"Kueue: {surge_groups} surge group(s) need "
        + ", ".join(f"{k}={v}" for k, v in sorted(need.items()))
        + " beyond the groups' own quota"
    ]
    if cq is None:
        lines.append(f"  ClusterQueue {cq_name or '?'}: not found (cannot compare)")
        return lines
    quota = cluster_queue_quota(cq)
    short = []
    for name, q in sorted(need.items()):
        line = quota.get(name)
        if line is None:
            lines.append(f"  {name}: not covered by ClusterQueue {cq_name}: inadmissible")
            short.append(name)
            continue
        ok = q.nanos <= line.free.nanos
        lines.append(
            f"  {name}: need {q}, free {line.free} of {line.nominal} in ClusterQueue {cq_name}"
            + ("" if ok else "  <- not enough")
        )
        if not ok:
            short.append(name)
    if short:
        lines.append(
            "  the surge groups will wait (gated) until quota frees up or is raised; with "
            "maxUnavailable 0 the rollout waits with them"
        )
    return lines
