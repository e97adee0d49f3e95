"""Which subgroup a pod of a group belongs to (upstream's getSubGroupIndex,
pkg/webhooks/pod_webhook.go; KEP-115 and KEP-257).

A group of ``size`` pods (worker index 0 is the leader) is cut into subgroups of ``subgroup_size``
pods. When ``size`` is not a multiple of the subgroup size but ``size - 1`` is, the leader is the
one extra pod and joins subgroup 0; with ``LeaderExcluded`` it belongs to no subgroup at all.
"""

from __future__ import annotations

from lws_operator.api.models import SubGroupPolicyType


def subgroup_index(size: int, subgroup_size: int, worker_index: int) -> int:
    """Subgroup of worker ``worker_index`` (1..size-1); upstream ``getSubGroupIndex``.

    The leader's subgroup is not computed here: it is 0, or none with ``LeaderExcluded``.
    """
    if subgroup_size < 1:
        raise ValueError(f"subgroup_size must be at least 1, got {subgroup_size}")
    if (size - 1) % subgroup_size == 0 and size % subgroup_size != 0:
        # The leader is the extra pod of subgroup 0, so workers count from 1.
        return (worker_index - 1) // subgroup_size
    return worker_index // subgroup_size


def leader_in_subgroup(policy_type: str | None) -> bool:
    """Whether the leader belongs to subgroup 0. A missing type is ``LeaderWorker`` (the CRD
    default; upstream omits the annotation when the type is unset)."""
    return policy_type != SubGroupPolicyType.LEADER_EXCLUDED
