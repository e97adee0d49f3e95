"""The leader StatefulSet's next apply (upstream's constructLeaderStatefulSetApplyConfiguration and
rollingUpdateParameters, pkg/controllers/leaderworkerset_controller.go): its body for the revision
and rollout step, whether applying it would change anything, and what to announce.

Upstream applies on every reconcile; here it is applied only when an apply would change the
object (plan/lws/applied.py, from what the ``lws`` field manager owns), which is the same result
with far fewer writes, removals included.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lws_operator.api.constants import FIELD_MANAGER
from lws_operator.api.models import LeaderWorkerSet
from lws_operator.plan.events import (
    CREATE,
    DELETE,
    FAILED_CREATE,
    FAILED_UPDATE,
    GROUPS_PROGRESSING,
    GROUPS_UPDATING,
    UPDATE,
    Event,
    normal,
    warning,
)
from lws_operator.plan.keys import RevisionKey
from lws_operator.plan.lws import claims
from lws_operator.plan.lws import statefulsets as sts_plan
from lws_operator.plan.lws.applied import apply_changes_nothing
from lws_operator.plan.lws.groups import Obj
from lws_operator.plan.lws.revision import RevisionChoice
from lws_operator.plan.lws.rollout import RolloutPlan
from lws_operator.plan.meta import is_controlled_by, spec_identity, statefulset_partition


@dataclass(frozen=True)
class LeaderStep:
    apply: dict[str, Any] | None
    """The body to apply now, or None: nothing would change, or claims block it."""
    failed: Event
    """To post when the apply fails (the caller appends the server's answer)."""
    events: tuple[Event, ...] = ()
    """To post once the apply succeeded."""
    claims_warning: Event | None = None
    """The volumeClaimTemplates change that could not be applied as asked (once a revision)."""


def foreign_leader(lws: LeaderWorkerSet, leader_sts: Obj | None) -> Event | None:
    """A StatefulSet named like the LWS that it does not control: reported, never touched,
    and nothing else is done (the groups' names are taken)."""
    if leader_sts is None or is_controlled_by(leader_sts, str(lws.metadata.get("uid", ""))):
        return None
    return warning(
        FAILED_CREATE,
        CREATE,
        f"StatefulSet {lws.name} exists and is not owned by this LeaderWorkerSet; "
        "delete or rename it",
    )


def leader_inputs(
    lws: Obj, leader_sts: Obj | None, choice: RevisionChoice, rollout: RolloutPlan
) -> tuple[Any, ...]:
    """What :func:`plan_leader` reads, as its memo key: the LWS's and the leader StatefulSet's
    spec and metadata (not their status), the revision chosen and the rollout step."""
    return (spec_identity(lws), spec_identity(leader_sts), choice.key, choice.changed, rollout)


def plan_leader(
    lws: LeaderWorkerSet,
    *,
    current: Obj | None,
    key: RevisionKey,
    rollout: RolloutPlan,
    revision_changed: bool,
) -> LeaderStep:
    name = lws.name
    desired = sts_plan.leader_statefulset(
        lws,
        revision_key=key,
        replicas=rollout.replicas,
        partition=rollout.partition,
        max_unavailable=rollout.sts_max_unavailable,
    )
    if current is None:
        created = normal(GROUPS_PROGRESSING, CREATE, f"Created leader statefulset {name}")
        failed = warning(FAILED_CREATE, CREATE, f"Failed to create leader statefulset {name}")
        return LeaderStep(desired, failed, (created,))
    failed = warning(FAILED_UPDATE, UPDATE, f"Failed to update leader statefulset {name}")
    claims_warning = None
    conflict = claims.claims_conflict(desired, dict(current))
    if conflict == claims.BLOCKED:
        return LeaderStep(None, failed, claims_warning=_claims_blocked(name))
    if conflict == claims.KEEP:
        claims.keep_claims(desired, dict(current))
        claims_warning = _claims_kept(name)
    served = sts_plan.as_served(desired, dict(current))
    if apply_changes_nothing(current, desired, FIELD_MANAGER, stored=served):
        return LeaderStep(None, failed, claims_warning=claims_warning)
    events = []
    if rollout.released_surge is not None:
        first, last = rollout.released_surge
        note = (
            f"deleting surge replica {name}-{first}"
            if first == last
            else f"deleting surge replicas from {name}-{first} to {name}-{last}"
        )
        events.append(normal(GROUPS_PROGRESSING, DELETE, note))
    old = statefulset_partition(current)
    if not revision_changed and rollout.partition != old:
        note = (
            f"Updating replica {rollout.partition}"
            if rollout.partition == old - 1
            else f"Updating replicas {rollout.partition} to {old - 1} (inclusive)"
        )
        events.append(normal(GROUPS_UPDATING, UPDATE, note))
    return LeaderStep(desired, failed, tuple(events), claims_warning)


def _claims_kept(name: str) -> Event:
    return warning(
        "VolumeClaimTemplatesKept",
        UPDATE,
        f"volumeClaimTemplates changed, but Kubernetes does not allow changing them on "
        f"StatefulSet {name}: leader pods keep the existing claims; worker StatefulSets "
        "created from now on get the new ones",
    )


def _claims_blocked(name: str) -> Event:
    return warning(
        FAILED_UPDATE,
        UPDATE,
        "volumeClaimTemplates of an existing LeaderWorkerSet cannot gain, lose or rename "
        f"claims (Kubernetes does not allow changing them on StatefulSet {name}); nothing is "
        "applied, scaling included, until the claim names are restored; or delete and "
        "recreate the LeaderWorkerSet",
    )
