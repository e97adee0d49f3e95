"""The LeaderWorkerSet API (``leaderworkerset.x-k8s.io/v1``): models, names, rules, CRD."""

from lws_operator.api.models import (
    Condition,
    LeaderWorkerSet,
    LeaderWorkerSetSpec,
    LeaderWorkerSetStatus,
    LeaderWorkerTemplate,
    NetworkConfig,
    PersistentVolumeClaimRetentionPolicy,
    RestartPolicy,
    RollingUpdateConfiguration,
    RolloutStrategy,
    RolloutStrategyType,
    StartupPolicy,
    SubdomainPolicy,
    SubGroupPolicy,
    SubGroupPolicyType,
)
from lws_operator.api.validation import FieldError, validate

__all__ = [
    "Condition",
    "FieldError",
    "LeaderWorkerSet",
    "LeaderWorkerSetSpec",
    "LeaderWorkerSetStatus",
    "LeaderWorkerTemplate",
    "NetworkConfig",
    "PersistentVolumeClaimRetentionPolicy",
    "RestartPolicy",
    "RollingUpdateConfiguration",
    "RolloutStrategy",
    "RolloutStrategyType",
    "StartupPolicy",
    "SubGroupPolicy",
    "SubGroupPolicyType",
    "SubdomainPolicy",
    "validate",
]
