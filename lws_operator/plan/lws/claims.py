"""Changed ``volumeClaimTemplates`` on an existing LeaderWorkerSet (an upstream quirk; S1 in
docs/compatibility.md).

Claims are part of the revision, so editing them starts a rolling update; but Kubernetes (1.36
included) forbids changing a StatefulSet's ``volumeClaimTemplates``, so the leader StatefulSet
cannot take the new ones. Upstream applies them anyway: every apply fails from then on, and the
LeaderWorkerSet is stuck, not even scaling. Here:

* same claim names, other specs (size, class, access modes): the leader StatefulSet keeps its
  claims, everything else (the new template included) is applied and the rollout proceeds;
  worker StatefulSets, created per group, get the new claims. A Warning event says so;
* claims added, removed or renamed: the leader pods would mount claims their StatefulSet does
  not have, so nothing is applied and a Warning event says how to get out.
"""

from __future__ import annotations

from typing import Any

from lws_operator.plan.meta import meta_of
from lws_operator.plan.quantity import parse

KEEP = "keep"  # same names: keep the leader StatefulSet's claims, apply the rest
BLOCKED = "blocked"  # names differ: do not apply


def _canonical(claim: dict[str, Any]) -> tuple[Any, ...]:
    """What upstream copies of a claim, with the API server's defaults and quantity forms."""
    spec = claim.get("spec") or {}
    resources = spec.get("resources") or {}

    def quantities(kind: str) -> tuple[tuple[str, str], ...]:
        values = resources.get(kind) or {}
        return tuple(sorted((k, _quantity(v)) for k, v in values.items()))

    return (
        meta_of(claim).get("name"),
        tuple(spec.get("accessModes") or ()),
        spec.get("storageClassName"),
        spec.get("volumeMode") or "Filesystem",
        quantities("requests"),
        quantities("limits"),
    )


def _quantity(value: str | int) -> str:
    try:
        return str(parse(value))
    except ValueError:  # the API server would have refused it; compare as written
        return str(value)


def _names(claims: list[dict[str, Any]]) -> list[Any]:
    return [meta_of(c).get("name") for c in claims]


def claims_conflict(desired: dict[str, Any], current: dict[str, Any] | None) -> str | None:
    """None when the leader StatefulSet ``current`` (or its absence) accepts the claims of
    ``desired``; KEEP or BLOCKED otherwise (see the module docstring)."""
    if current is None:
        return None
    want = (desired.get("spec") or {}).get("volumeClaimTemplates") or []
    have = (current.get("spec") or {}).get("volumeClaimTemplates") or []
    if [_canonical(c) for c in want] == [_canonical(c) for c in have]:
        return None
    return KEEP if _names(want) == _names(have) else BLOCKED


def keep_claims(desired: dict[str, Any], current: dict[str, Any]) -> None:
    """Put the claims of the existing leader StatefulSet into ``desired`` (in place)."""
    have = (current.get("spec") or {}).get("volumeClaimTemplates")
    spec = desired.setdefault("spec", {})
    if have:
        spec["volumeClaimTemplates"] = have
    else:
        spec.pop("volumeClaimTemplates", None)
