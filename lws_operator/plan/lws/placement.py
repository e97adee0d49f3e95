"""Exclusive placement: one group (or subgroup) per topology domain (upstream's
SetExclusiveAffinities, pkg/webhooks/pod_webhook.go, and setNodeSelectorForWorkerPods,
pkg/controllers/pod_controller.go).

A pod gets a required pod-affinity term that pulls it to the domain of the pods sharing its key
(``group-key`` or ``subgroup-key``), and a required anti-affinity term that keeps it away from
domains holding pods with another value of that key. No namespaces are set: the terms apply
within the pod's namespace, as upstream.
"""

from __future__ import annotations

from typing import Any

from lws_operator.plan.lws.podview import PodView

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def exclusive_terms(
    label_key: str, value: str, topology_key: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The (affinity, anti-affinity) pair of terms for pods labelled ``label_key=value``."""
    affinity = {
        "labelSelector": {
            "matchExpressions": [{"key": label_key, "operator": "In", "values": [value]}]
        },
        "topologyKey": topology_key,
    }
    anti_affinity = {
        "labelSelector": {
            "matchExpressions": [
                {"key": label_key, "operator": "Exists"},
                {"key": label_key, "operator": "NotIn", "values": [value]},
            ]
        },
        "topologyKey": topology_key,
    }
    return affinity, anti_affinity


def add_exclusive_terms(pod: PodView, label_key: str, value: str, topology_key: str) -> None:
    """Append the pair after the user's terms; each only if its list has no term of ours yet.

    A term is ours when it is on ``topology_key`` and selects on ``label_key``, whatever the
    value: re-mutating adds nothing, and a term copied into a template is not contradicted.
    Upstream skips both terms as soon as both lists hold *any* term on ``topology_key``, which
    also drops them when the user has own terms there, or when the group and the subgroup
    exclusive topologies are the same key.
    """
    affinity, anti_affinity = exclusive_terms(label_key, value, topology_key)
    for kind, term in (("podAffinity", affinity), ("podAntiAffinity", anti_affinity)):
        terms = pod.array("spec", "affinity", kind, _REQUIRED, create=True)
        if not any(_is_ours(t, label_key, topology_key) for t in terms):
            terms.append(term)


def _is_ours(term: Any, label_key: str, topology_key: str) -> bool:
    if not isinstance(term, dict) or term.get("topologyKey") != topology_key:
        return False
    selector = term.get("labelSelector")
    expressions = selector.get("matchExpressions") if isinstance(selector, dict) else None
    return isinstance(expressions, list) and any(
        isinstance(e, dict) and e.get("key") == label_key for e in expressions
    )
