"""pydantic models of ``leaderworkerset.x-k8s.io/v1`` LeaderWorkerSet, spec and status.

Fields, JSON names and defaults are those of upstream v0.10.0
(``api/leaderworkerset/v1/leaderworkerset_types.go``, and the Default of
``pkg/webhooks/leaderworkerset_webhook.go``); the defaults are what the API server stores for an
object created without them. The CRD schema is generated from these classes
(:mod:`lws_operator.api.crd`), so the descriptions here are what ``kubectl explain`` prints.
Cross-field rules live in :mod:`lws_operator.api.rules`.
"""

from __future__ import annotations

import inspect
from enum import StrEnum

from pydantic import Field

from lws_operator.api import constants as c
from lws_operator.api.types import (
    ApiModel,
    ApiObject,
    Int32,
    Int64,
    IntOrString,
    PersistentVolumeClaim,
    PodTemplateSpec,
)


def _doc(cls: type) -> str:
    """A class docstring as one line, for a field description."""
    return " ".join(inspect.cleandoc(cls.__doc__ or "").split())


class RestartPolicy(StrEnum):
    """What happens to a group when one of its pods fails or restarts."""

    RECREATE_GROUP_ON_POD_RESTART = "RecreateGroupOnPodRestart"
    RECREATE_GROUP_AFTER_START = "RecreateGroupAfterStart"
    NONE = "None"
    # Deprecated; means None. Upstream's webhook rewrites it to None, we keep it as written.
    DEFAULT = "Default"


class StartupPolicy(StrEnum):
    LEADER_CREATED = "LeaderCreated"
    LEADER_READY = "LeaderReady"


class RolloutStrategyType(StrEnum):
    ROLLING_UPDATE = "RollingUpdate"


class SubGroupPolicyType(StrEnum):
    LEADER_WORKER = "LeaderWorker"
    LEADER_EXCLUDED = "LeaderExcluded"


class SubdomainPolicy(StrEnum):
    SHARED = "Shared"
    UNIQUE_PER_REPLICA = "UniquePerReplica"


class PvcRetentionPolicyType(StrEnum):
    RETAIN = "Retain"
    DELETE = "Delete"


class SubGroupPolicy(ApiModel):
    """Splits every group into subgroups of subGroupSize pods (for example one TPU slice or one
    tensor-parallel unit each). Can be set only at creation and never removed."""

    sub_group_policy_type: SubGroupPolicyType = Field(
        default=SubGroupPolicyType.LEADER_WORKER,
        description=(
            "LeaderWorker: the leader belongs to subgroup 0 (when size is not a multiple of "
            "subGroupSize, subgroup 0 has one extra pod: the leader). LeaderExcluded: the leader "
            "is in no subgroup and the workers form size-1 / subGroupSize subgroups."
        ),
    )
    sub_group_size: Int32 | None = Field(
        default=None,
        description=(
            "Number of pods per subgroup. Required; immutable. size or size-1 must be "
            "divisible by it, and size-1 must be with LeaderExcluded."
        ),
    )


class PersistentVolumeClaimRetentionPolicy(ApiModel):
    """What happens to the PVCs created from volumeClaimTemplates (StatefulSet semantics)."""

    when_deleted: PvcRetentionPolicyType | None = Field(
        default=None,
        description="Retain (default) or Delete the PVCs when the LeaderWorkerSet is deleted.",
    )
    when_scaled: PvcRetentionPolicyType | None = Field(
        default=None,
        description="Retain (default) or Delete the PVCs of groups removed by a scale down.",
    )


class LeaderWorkerTemplate(ApiModel):
    """The pods of one group: a leader and size-1 workers."""

    leader_template: PodTemplateSpec | None = Field(
        default=None,
        description="Pod template of the leader (worker index 0). Defaults to workerTemplate.",
    )
    worker_template: PodTemplateSpec = Field(
        description="Pod template of the workers (worker indexes 1 to size-1).",
    )
    size: Int32 = Field(
        default=1,
        description=(
            "Number of pods per group, the leader included. With size 1 a group is only its "
            "leader. Changing it rolls every group."
        ),
    )
    restart_policy: RestartPolicy = Field(
        default=RestartPolicy.RECREATE_GROUP_ON_POD_RESTART,
        description=(
            "RecreateGroupOnPodRestart: recreate the whole group when any of its pods fails or a "
            "container restarts. RecreateGroupAfterStart: the same, but only once every pod of "
            "the group has started (not while any is Pending). None: let each StatefulSet "
            "restart its own pods. Default: deprecated spelling of None."
        ),
    )
    sub_group_policy: SubGroupPolicy | None = Field(default=None, description=_doc(SubGroupPolicy))
    volume_claim_templates: list[PersistentVolumeClaim] | None = Field(
        default=None,
        description=(
            "PVC templates for every pod of every group, as in a StatefulSet. Claims are named "
            "<claim>-<pod name> and mounted by adding a volumeMount named like the claim."
        ),
    )
    persistent_volume_claim_retention_policy: PersistentVolumeClaimRetentionPolicy | None = Field(
        default=None, description=_doc(PersistentVolumeClaimRetentionPolicy)
    )
    # --- failure handling (KEP-820, issue 16) ---
    max_group_restarts: Int32 | None = Field(
        default=None,
        description=(
            "Restart budget of each group (upstream KEP-820): how many times the operator may "
            "recreate one group after a failure. Once a group fails with its budget spent it "
            "is no longer recreated, its pods are kept as they are for inspection, and the "
            "LeaderWorkerSet gets condition Failed (reason MaxGroupRestartsExceeded). 0: the "
            "first failure is final. Unset: no limit. Only with restartPolicy "
            "RecreateGroupOnPodRestart."
        ),
    )


class RollingUpdateConfiguration(ApiModel):
    """How many groups a rolling update may take down or add at once."""

    partition: Int32 = Field(
        default=0,
        description=(
            "Groups with an index below partition keep their current template; only groups "
            "with an index >= partition are updated. Used for canaries and staged rollouts."
        ),
    )
    max_unavailable: IntOrString = Field(
        default=1,
        description=(
            "Groups that may be unavailable during the update: a number, or a percentage of "
            "replicas rounded down. Must not be 0 when maxSurge is 0."
        ),
    )
    max_surge: IntOrString = Field(
        default=0,
        description=(
            "Extra groups that may be created above replicas during the update: a number, or a "
            "percentage of replicas rounded up."
        ),
    )


class RolloutStrategy(ApiModel):
    """How template changes are rolled out to the groups."""

    type: RolloutStrategyType = Field(
        default=RolloutStrategyType.ROLLING_UPDATE,
        description="Always RollingUpdate: replace groups a few at a time.",
    )
    rolling_update_configuration: RollingUpdateConfiguration = Field(
        default_factory=lambda: RollingUpdateConfiguration(),
        description=_doc(RollingUpdateConfiguration),
        json_schema_extra={"default": {}},
    )


class NetworkConfig(ApiModel):
    """DNS of the pods."""

    subdomain_policy: SubdomainPolicy = Field(
        default=SubdomainPolicy.SHARED,
        description=(
            "Shared: one headless Service named like the LeaderWorkerSet for all pods. "
            "UniquePerReplica: one headless Service per group, named like its leader pod."
        ),
    )
    # --- failure handling (KEP-820, issue 16) ---
    publish_not_ready_addresses: bool | None = Field(
        default=None,
        description=(
            "Whether the headless Services publish the DNS names of pods that are not Ready, so "
            "init containers (a preflight check) can resolve the leader and their peers "
            "(upstream KEP-820). Unset: published, as LeaderWorkerSet v0.10.0 always does. "
            "false: only Ready pods get DNS records."
        ),
    )


class LeaderWorkerSetSpec(ApiModel):
    """Desired state of a LeaderWorkerSet."""

    replicas: Int32 = Field(
        default=1,
        description="Number of groups (one leader plus size-1 workers each). 0 to 1000000.",
    )
    leader_worker_template: LeaderWorkerTemplate = Field(description=_doc(LeaderWorkerTemplate))
    rollout_strategy: RolloutStrategy = Field(
        default_factory=lambda: RolloutStrategy(),
        description=_doc(RolloutStrategy),
        json_schema_extra={"default": {}},
    )
    startup_policy: StartupPolicy = Field(
        default=StartupPolicy.LEADER_CREATED,
        description=(
            "LeaderCreated: create the workers as soon as the leader pod exists. LeaderReady: "
            "create them only once the leader pod is Ready."
        ),
    )
    network_config: NetworkConfig = Field(
        default_factory=lambda: NetworkConfig(),
        description=_doc(NetworkConfig),
        json_schema_extra={"default": {}},
    )


# The schema of metav1.Condition as controller-gen emits it, so status writes are checked the
# same way as upstream's.
_CONDITION_TYPE_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
_CONDITION_REASON_PATTERN = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"


class Condition(ApiModel):
    """A metav1.Condition."""

    type: str = Field(
        description="Available, Progressing, UpdateInProgress or Failed.",
        json_schema_extra={"maxLength": 316, "pattern": _CONDITION_TYPE_PATTERN},
    )
    status: str = Field(
        description="True, False or Unknown.",
        json_schema_extra={"enum": ["True", "False", "Unknown"]},
    )
    observed_generation: Int64 | None = Field(
        default=None,
        description="metadata.generation the condition was computed from.",
        json_schema_extra={"minimum": 0},
    )
    last_transition_time: str = Field(
        description="When the condition last changed status (RFC 3339).",
        json_schema_extra={"format": "date-time"},
    )
    reason: str = Field(
        description="CamelCase reason of the last transition.",
        json_schema_extra={
            "maxLength": 1024,
            "minLength": 1,
            "pattern": _CONDITION_REASON_PATTERN,
        },
    )
    message: str = Field(
        description="Human-readable details.", json_schema_extra={"maxLength": 32768}
    )


class LeaderWorkerSetStatus(ApiModel):
    """Observed state of a LeaderWorkerSet, written by the operator."""

    conditions: list[Condition] = Field(
        default_factory=list,
        description="Available, Progressing, UpdateInProgress and Failed.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )
    ready_replicas: Int32 = Field(
        default=0,
        description=(
            "Groups whose leader and workers are all ready, updated or not (surge groups included)."
        ),
    )
    updated_replicas: Int32 = Field(
        default=0, description="Groups running the current template revision, ready or not."
    )
    replicas: Int32 = Field(
        default=0, description="Groups that exist (leader pods created), surge groups included."
    )
    hpa_pod_selector: str | None = Field(
        default=None,
        description="Label selector of the leader pods, for the scale subresource and HPA.",
    )
    observed_generation: Int64 | None = Field(
        default=None, description="metadata.generation this status was computed from."
    )


class LeaderWorkerSet(ApiObject):
    """A set of groups of pods (one leader and size-1 workers) replicated and updated as units."""

    api_version: str = c.API_VERSION
    kind: str = c.KIND
    spec: LeaderWorkerSetSpec
    status: LeaderWorkerSetStatus | None = None
