"""pydantic models of ``disaggregatedset.x-k8s.io/v1``: DisaggregatedSet and
DisaggregatedSetRoleScaler, spec and status.

Fields, JSON names and defaults are those of upstream v0.10.0 (``api/disaggregatedset/v1/``). Each
role embeds a LeaderWorkerSet spec with the defaults of upstream's DisaggregatedSet CRD, which are
not all those of a LeaderWorkerSet: there is no mutating webhook for DisaggregatedSets, so an
omitted ``rolloutStrategy`` stays omitted (and means maxSurge 1, maxUnavailable 0 to the rollout
planner, ``plan/ds/rollout.py``). The CRD schemas are generated from these classes
(:mod:`lws_operator.api.ds_crd`); cross-field rules are in :mod:`lws_operator.api.ds_rules`.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field
from pydantic.config import JsonDict

from lws_operator.api import constants as lc
from lws_operator.api import ds_constants as c
from lws_operator.api.models import (
    Condition,
    LeaderWorkerTemplate,
    RollingUpdateConfiguration,
    RolloutStrategyType,
    StartupPolicy,
    SubdomainPolicy,
    _doc,
)
from lws_operator.api.types import ApiModel, ApiObject, Int32, Int64, ObjectMeta

_LIST_MAP_NAME: JsonDict = {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]}
_LIST_MAP_TYPE: JsonDict = {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]}
ROLE_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"


class RoleScalingMode(StrEnum):
    STATIC = "Static"
    EXTERNAL = "External"


class PlacementType(StrEnum):
    NONE = "None"
    EXCLUSIVE_SLICE = "ExclusiveSlice"
    EXCLUSIVE_TOPOLOGY = "ExclusiveTopology"


class RoleScaling(ApiModel):
    """Where a role's replica count comes from."""

    mode: RoleScalingMode = Field(
        default=RoleScalingMode.STATIC,
        description=(
            "Static: the role's spec.replicas. External: the spec.replicas of the "
            "DisaggregatedSetRoleScaler <disaggregatedset>-<role>, created by the operator for "
            "an HPA or KEDA to drive through its scale subresource; spec.replicas is ignored."
        ),
    )


class RoleRolloutStrategy(ApiModel):
    """How this role's replicas move to a new revision (the DisaggregatedSet coordinates the
    roles; partition is not supported)."""

    type: RolloutStrategyType = Field(
        default=RolloutStrategyType.ROLLING_UPDATE, description="Only RollingUpdate."
    )
    rolling_update_configuration: RollingUpdateConfiguration | None = Field(
        default=None,
        description=(
            "maxSurge and maxUnavailable of this role during a rollout (partition must be 0). "
            "Without it: maxSurge 1, maxUnavailable 0."
        ),
    )


class RoleNetworkConfig(ApiModel):
    """DNS of the role's pods."""

    subdomain_policy: SubdomainPolicy = Field(
        description="Shared or UniquePerReplica, as for a LeaderWorkerSet."
    )


class RoleSpec(ApiModel):
    """The LeaderWorkerSet spec of a role: each slice and revision gets a LeaderWorkerSet
    made from it."""

    replicas: Int32 = Field(
        default=1,
        description=(
            "Groups of this role per slice (Static roles). Either every Static role has 0 or "
            "every one has more."
        ),
        json_schema_extra={"minimum": 0, "maximum": lc.MAX_REPLICAS},
    )
    leader_worker_template: LeaderWorkerTemplate = Field(
        description=(
            "The role's groups, as in a LeaderWorkerSet. Changing it (or any role's) is a new "
            "revision: new LeaderWorkerSets, replicas moved over step by step."
        )
    )
    rollout_strategy: RoleRolloutStrategy | None = Field(
        default=None, description=_doc(RoleRolloutStrategy)
    )
    startup_policy: StartupPolicy = Field(
        default=StartupPolicy.LEADER_CREATED,
        description="LeaderCreated or LeaderReady, as for a LeaderWorkerSet.",
    )
    network_config: RoleNetworkConfig | None = Field(
        default=None, description=_doc(RoleNetworkConfig)
    )


class DisaggregatedRole(ApiModel):
    """One role (for example prefill or decode): a LeaderWorkerSet template and its
    scaling."""

    name: str = Field(
        description="The role's name, unique in the set; part of its LeaderWorkerSets' names.",
        json_schema_extra={"minLength": 1, "maxLength": 63, "pattern": ROLE_NAME_PATTERN},
    )
    scaling: RoleScaling | None = Field(default=None, description=_doc(RoleScaling))
    metadata: ObjectMeta | None = Field(
        default=None,
        description=(
            "Labels and annotations copied onto the role's LeaderWorkerSets (the operator's "
            "own labels win)."
        ),
    )
    spec: RoleSpec = Field(description=_doc(RoleSpec))

    @property
    def external(self) -> bool:
        return self.scaling is not None and self.scaling.mode == RoleScalingMode.EXTERNAL


class PlacementPolicy(ApiModel):
    """Where a slice's roles run: pod affinity and anti-affinity added to every
    LeaderWorkerSet created from now on."""

    type: PlacementType = Field(
        default=PlacementType.NONE,
        description=(
            "None: no affinity. ExclusiveSlice: a slice's roles in one domain of the topology, "
            "this set's slices in different domains. ExclusiveTopology: also no other "
            "DisaggregatedSet's slice in that domain."
        ),
    )
    topology: str | None = Field(
        default=None,
        description="The node label that defines a domain (e.g. topology.kubernetes.io/zone).",
    )


class DisaggregatedSetSpec(ApiModel):
    """Desired state of a DisaggregatedSet."""

    roles: list[DisaggregatedRole] = Field(
        description="2 to 10 roles, by unique name.",
        json_schema_extra={"minItems": c.MIN_ROLES, "maxItems": c.MAX_ROLES, **_LIST_MAP_NAME},
    )
    slices: Int32 = Field(
        default=1,
        description=(
            "Independent copies of the whole set of roles, each rolled out on its own. "
            "Changing it adds or removes copies; it starts no rollout."
        ),
        json_schema_extra={"minimum": 1, "maximum": c.MAX_SLICES},
    )
    placement_policy: PlacementPolicy | None = Field(
        default=None, description=_doc(PlacementPolicy)
    )


class RoleStatus(ApiModel):
    """The groups of one role, over its slices and revisions."""

    name: str = Field(description="The role.")
    replicas: Int32 = Field(default=0, description="Groups that exist.")
    ready_replicas: Int32 = Field(default=0, description="Groups that are ready.")
    updated_replicas: Int32 = Field(default=0, description="Groups of the current revision.")


class DisaggregatedSetStatus(ApiModel):
    """Observed state of a DisaggregatedSet, written by the operator."""

    observed_generation: Int64 | None = Field(
        default=None, description="metadata.generation this status was computed from."
    )
    role_statuses: list[RoleStatus] = Field(
        default_factory=list,
        description="One entry per role of spec.roles, in that order.",
        json_schema_extra=_LIST_MAP_NAME,
    )
    conditions: list[Condition] = Field(
        default_factory=list,
        description=(
            "Available (every role at its desired replicas, ready and updated) or Progressing."
        ),
        json_schema_extra=_LIST_MAP_TYPE,
    )


class DisaggregatedSet(ApiObject):
    """Roles (for example prefill and decode) run as one LeaderWorkerSet per role and slice,
    rolled out together so the capacity ratio between roles holds."""

    api_version: str = c.API_VERSION
    kind: str = c.KIND
    spec: DisaggregatedSetSpec
    status: DisaggregatedSetStatus | None = None


class RoleScalerSpec(ApiModel):
    """The replicas an autoscaler wants for the role (through the scale subresource)."""

    replicas: Int32 = Field(
        default=0,
        description=(
            "Groups of the role. Set by the operator when it creates the scaler (the role's "
            "current groups, or 1), then by the autoscaler."
        ),
        json_schema_extra={"minimum": 0},
    )


class RoleScalerStatus(ApiModel):
    """What the role runs, written by the operator."""

    replicas: Int32 = Field(default=0, description="Groups of the role, over its revisions.")
    selector: str | None = Field(
        default=None,
        description=(
            "Label selector of the role's leader pods (one per group), for the HPA's "
            "per-pod metrics."
        ),
    )
    observed_generation: Int64 | None = Field(
        default=None, description="metadata.generation this status was computed from."
    )
    conditions: list[Condition] = Field(
        default_factory=list,
        description="Ready: bound to a live DisaggregatedSet role.",
        json_schema_extra=_LIST_MAP_TYPE,
    )


class DisaggregatedSetRoleScaler(ApiObject):
    """The scale subresource of one External role of a DisaggregatedSet, named
    <disaggregatedset>-<role>; an HPA, KEDA or kubectl scale writes spec.replicas."""

    api_version: str = c.API_VERSION
    kind: str = c.SCALER_KIND
    spec: RoleScalerSpec = Field(default_factory=lambda: RoleScalerSpec())
    status: RoleScalerStatus | None = None
