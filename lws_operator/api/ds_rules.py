"""Every validation rule of the DisaggregatedSet API, as CEL for the API server and as a
Python check with the same verdict and message for ``lws-operator validate``.

Upstream validates DisaggregatedSets with one CRD rule (replicas all zero or all non-zero) and
a validating webhook (``pkg/webhooks/disaggregatedset``); here the webhook's rules are CRD
rules where a CRD can express them, and a ValidatingAdmissionPolicy where they parse
percentages (too costly for the CRD's estimated CEL budget), plus a few checks that turn a
LeaderWorkerSet the operator could never create into an admission error (docs/compatibility.md,
D rows).

Scopes are JSON paths from the object's root; ``[]`` stands for every item of a list (the
API server reports the item's index). A check gets the value at its scope (a model, or the
role list's item) and the old value there, or None.
"""

from __future__ import annotations

import re
from typing import Any

from lws_operator.api import constants as lc
from lws_operator.api import ds_constants as c
from lws_operator.api.ds_models import (
    DisaggregatedRole,
    DisaggregatedSet,
    DisaggregatedSetSpec,
    PlacementType,
)
from lws_operator.api.rules import (
    _DNS1035_MESSAGE,
    DNS1035_PATTERN,
    Rule,
    _cel_scaled,
    _cel_string,
    _int_or_percent_rules,
    _scaled_or_none,
)

ROLES = ("spec", "roles", "[]")
_RUC = (*ROLES, "spec", "rolloutStrategy", "rollingUpdateConfiguration")
_PLACEMENT = ("spec", "placementPolicy")

# CEL: "role r is External".
_EXTERNAL = "has(r.scaling) && r.scaling.mode == 'External'"
_NOT_EXTERNAL = f"!({_EXTERNAL})"

# --- replicas: all Static roles zero, or all non-zero (upstream's CRD rule, verbatim) ----------

REPLICAS_MESSAGE = (
    "replicas must be zero for all non-External roles or non-zero for all non-External roles"
)
_REPLICAS_CEL = (
    "self.roles.filter(r, !has(r.scaling) || r.scaling.mode != 'External')"
    ".all(r, !has(r.spec.replicas) || r.spec.replicas == 0) || "
    "self.roles.filter(r, !has(r.scaling) || r.scaling.mode != 'External')"
    ".all(r, has(r.spec.replicas) && r.spec.replicas > 0)"
)


def _check_replicas(spec: DisaggregatedSetSpec, _old: Any) -> str | None:
    static = [r.spec.replicas for r in spec.roles if not r.external]
    if all(n == 0 for n in static) or all(n > 0 for n in static):
        return None
    return REPLICAS_MESSAGE


# --- the webhook's rules ---------------------------------------------------------------------

PARTITION_MESSAGE = (
    "is not supported by DisaggregatedSet (must be 0): rolling updates are managed across "
    "roles by the DisaggregatedSet controller"
)
SLICES_MESSAGE = (
    "must be 1 while a role has scaling.mode: External (alpha restriction, as upstream: one "
    "scaler per role does not drive several slices)"
)
TOPOLOGY_MESSAGE = (
    "is required when type is not None: the node label whose values are the domains, such as "
    "topology.kubernetes.io/zone"
)
_EXCLUSIVE_KEYS = (lc.EXCLUSIVE_KEY_ANNOTATION, lc.SUBGROUP_EXCLUSIVE_KEY_ANNOTATION)
EXCLUSIVE_MESSAGE = (
    f"the {lc.EXCLUSIVE_KEY_ANNOTATION} and {lc.SUBGROUP_EXCLUSIVE_KEY_ANNOTATION} annotations "
    "(on a role's metadata or on its leader or worker template) must not be combined with a "
    "placementPolicy type other than None: both place pods by topology and the slice would "
    "never schedule; use one of the two"
)
SCALER_NAME_MESSAGE = (
    f"an External role's scaler is named <disaggregatedset>-<role>, at most {c.MAX_NAME} "
    "characters; shorten the DisaggregatedSet's or the role's name"
)
# <ds>-<slice>-<8 hex>-<role>-prv: the private Service of each child LeaderWorkerSet.
_SERVICE_OVERHEAD = len("-") + len("-") + 8 + len("-") + len(c.SERVICE_SUFFIX)
SERVICE_NAME_MESSAGE = (
    f"the private Service of a role's LeaderWorkerSet, <disaggregatedset>-<slice>-<revision>-"
    f"<role>{c.SERVICE_SUFFIX}, must fit in {lc.DNS_LABEL_MAX} characters; shorten the "
    "DisaggregatedSet's or the role's name"
)
BOTH_ZERO_MESSAGE = (
    "spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable must not be 0 when "
    "maxSurge is 0, or no group of the role could ever be replaced; set maxUnavailable or "
    "maxSurge to at least 1"
)
NAME_MESSAGE = _DNS1035_MESSAGE.replace("the headless Service", "its LeaderWorkerSets")
EXTERNAL_REPLICAS_WARNING = (
    'role "{role}" sets scaling.mode: External and spec.replicas: {replicas} — spec.replicas '
    'is ignored; drive replicas via DisaggregatedSetRoleScaler "{scaler}" instead'
)


def _check_partition(value: int, _old: Any) -> str | None:
    return None if value == 0 else PARTITION_MESSAGE


def _check_slices(spec: DisaggregatedSetSpec, _old: Any) -> str | None:
    if spec.slices > 1 and any(r.external for r in spec.roles):
        return SLICES_MESSAGE
    return None


def placement_active(spec: DisaggregatedSetSpec) -> bool:
    policy = spec.placement_policy
    return policy is not None and policy.type != PlacementType.NONE


def _check_topology(spec: DisaggregatedSetSpec, _old: Any) -> str | None:
    policy = spec.placement_policy
    if placement_active(spec) and policy is not None and not policy.topology:
        return TOPOLOGY_MESSAGE
    return None


def role_exclusive_annotation(role: DisaggregatedRole) -> str | None:
    """The first LWS exclusive-topology annotation the role carries where the pod webhook
    would see it: the role's metadata, its leader template or its worker template."""
    lwt = role.spec.leader_worker_template
    places = (
        role.metadata,
        (lwt.leader_template or {}).get("metadata"),
        lwt.worker_template.get("metadata"),
    )
    for key in _EXCLUSIVE_KEYS:
        for meta in places:
            if isinstance(meta, dict) and key in (meta.get("annotations") or {}):
                return key
    return None


def _check_exclusive(spec: DisaggregatedSetSpec, _old: Any) -> str | None:
    if placement_active(spec) and any(role_exclusive_annotation(r) for r in spec.roles):
        return EXCLUSIVE_MESSAGE
    return None


def _check_dns1035(ds: DisaggregatedSet, old: DisaggregatedSet | None) -> str | None:
    if old is not None:
        return None
    return None if re.fullmatch(DNS1035_PATTERN, ds.name) else NAME_MESSAGE


def _check_scaler_name(ds: DisaggregatedSet, _old: Any) -> str | None:
    for role in ds.spec.roles:
        if role.external and len(ds.name) + 1 + len(role.name) > c.MAX_NAME:
            return SCALER_NAME_MESSAGE
    return None


def service_name_length(ds_name: str, role: str, slices: int) -> int:
    """The length of the longest private Service name of a role (its last slice's)."""
    return len(ds_name) + len(str(slices - 1)) + len(role) + _SERVICE_OVERHEAD


def _check_service_name(ds: DisaggregatedSet, _old: Any) -> str | None:
    for role in ds.spec.roles:
        if service_name_length(ds.name, role.name, ds.spec.slices) > lc.DNS_LABEL_MAX:
            return SERVICE_NAME_MESSAGE
    return None


def both_zero(role: DisaggregatedRole) -> bool:
    """Upstream's webhook rule: a role with replicas and a rollingUpdateConfiguration whose
    maxUnavailable and maxSurge both scale to 0 (against spec.replicas)."""
    strategy = role.spec.rollout_strategy
    ruc = strategy.rolling_update_configuration if strategy is not None else None
    if ruc is None or role.spec.replicas == 0:
        return False
    unavailable = _scaled_or_none(ruc.max_unavailable, role.spec.replicas, round_up=False)
    surge = _scaled_or_none(ruc.max_surge, role.spec.replicas, round_up=True)
    return unavailable == 0 and surge == 0


def _check_both_zero(ds: DisaggregatedSet, _old: Any) -> str | None:
    bad = [r.name for r in ds.spec.roles if both_zero(r)]
    return f"role {bad[0]}: {BOTH_ZERO_MESSAGE}" if bad else None


def external_replicas_warnings(ds: DisaggregatedSet) -> list[str]:
    """Upstream's admission warnings: an External role's spec.replicas above 1 is ignored."""
    return [
        EXTERNAL_REPLICAS_WARNING.format(
            role=r.name, replicas=r.spec.replicas, scaler=f"{ds.name}-{r.name}"
        )
        for r in ds.spec.roles
        if r.external and r.spec.replicas > 1
    ]


# --- CEL pieces ----------------------------------------------------------------------------


def _has_annotation(meta: str, key: str) -> str:
    return f"(has({meta}.annotations) && '{key}' in {meta}.annotations)"


def _role_has_exclusive_cel() -> str:
    lwt = "r.spec.leaderWorkerTemplate"
    terms = []
    for key in _EXCLUSIVE_KEYS:
        terms.append(f"(has(r.metadata) && {_has_annotation('r.metadata', key)})")
        terms.append(
            f"(has({lwt}.leaderTemplate) && has({lwt}.leaderTemplate.metadata) && "
            f"{_has_annotation(lwt + '.leaderTemplate.metadata', key)})"
        )
        terms.append(
            f"(has({lwt}.workerTemplate.metadata) && "
            f"{_has_annotation(lwt + '.workerTemplate.metadata', key)})"
        )
    return " || ".join(terms)


_PLACEMENT_ACTIVE_CEL = (
    "has(self.placementPolicy) && has(self.placementPolicy.type) && "
    "self.placementPolicy.type != 'None'"
)
_SLICES = "(has(self.spec.slices) ? self.spec.slices : 1)"
_RUC_OF = "r.spec.rolloutStrategy.rollingUpdateConfiguration"
_BOTH_ZERO_CEL = (
    "has(r.spec.rolloutStrategy) && has(r.spec.rolloutStrategy.rollingUpdateConfiguration) && "
    "r.spec.replicas != 0 && "
    f"({_cel_scaled(_RUC_OF + '.maxUnavailable', 'r.spec.replicas', round_up=False)}) == 0 && "
    f"({_cel_scaled(_RUC_OF + '.maxSurge', 'r.spec.replicas', round_up=True)}) == 0"
)


# --- The rule table --------------------------------------------------------------------------

RULES: tuple[Rule, ...] = (
    Rule(
        (),
        ("metadata", "name"),
        f"oldSelf.hasValue() || self.metadata.name.matches({_cel_string(DNS1035_PATTERN)})",
        NAME_MESSAGE,
        _check_dns1035,
        transition="optional",
    ),
    Rule(
        (),
        ("spec", "roles"),
        f"self.spec.roles.all(r, {_NOT_EXTERNAL} || "
        f"size(self.metadata.name) + 1 + size(r.name) <= {c.MAX_NAME})",
        SCALER_NAME_MESSAGE,
        _check_scaler_name,
    ),
    Rule(
        (),
        ("spec", "roles"),
        f"self.spec.roles.all(r, size(self.metadata.name) + size(string({_SLICES} - 1)) + "
        f"size(r.name) + {_SERVICE_OVERHEAD} <= {lc.DNS_LABEL_MAX})",
        SERVICE_NAME_MESSAGE,
        _check_service_name,
    ),
    Rule(("spec",), ("roles",), _REPLICAS_CEL, REPLICAS_MESSAGE, _check_replicas),
    Rule(
        ("spec",),
        ("slices",),
        f"!has(self.slices) || self.slices <= 1 || self.roles.all(r, {_NOT_EXTERNAL})",
        SLICES_MESSAGE,
        _check_slices,
        reason="FieldValueForbidden",
    ),
    Rule(
        ("spec",),
        ("placementPolicy", "topology"),
        f"!({_PLACEMENT_ACTIVE_CEL}) || "
        "(has(self.placementPolicy.topology) && self.placementPolicy.topology != '')",
        TOPOLOGY_MESSAGE,
        _check_topology,
        reason="FieldValueRequired",
    ),
    Rule(
        ("spec",),
        ("roles",),
        f"!({_PLACEMENT_ACTIVE_CEL}) || !self.roles.exists(r, {_role_has_exclusive_cel()})",
        EXCLUSIVE_MESSAGE,
        _check_exclusive,
        reason="FieldValueForbidden",
    ),
    Rule(
        (*_RUC, "partition"),
        (),
        "self == 0",
        PARTITION_MESSAGE,
        _check_partition,
        reason="FieldValueForbidden",
    ),
    *_int_or_percent_rules(_RUC, "maxUnavailable"),
    *_int_or_percent_rules(_RUC, "maxSurge"),
    # Policy: percentages scaled against replicas.
    Rule(
        (),
        ("spec", "roles"),
        f"!object.spec.roles.exists(r, {_BOTH_ZERO_CEL})",
        BOTH_ZERO_MESSAGE,
        _check_both_zero,
        message_expression=(
            f"'role ' + object.spec.roles.filter(r, {_BOTH_ZERO_CEL})[0].name + ': ' + "
            f"{_cel_string(BOTH_ZERO_MESSAGE)}"
        ),
        target="policy",
    ),
)

# The admission warnings (a policy bound with validationActions Warn): an External role's
# spec.replicas > 1. The message names the first such role.
_WARN_CEL = f"!object.spec.roles.exists(r, {_EXTERNAL} && r.spec.replicas > 1)"
_WARN_ROLE = f"object.spec.roles.filter(r, {_EXTERNAL} && r.spec.replicas > 1)[0]"
WARNING_RULE = Rule(
    (),
    ("spec", "roles"),
    _WARN_CEL,
    "spec.replicas of an External role is ignored; drive replicas via its "
    "DisaggregatedSetRoleScaler instead",
    lambda ds, _o: None,
    message_expression=(
        f"'role \"' + {_WARN_ROLE}.name + '\" sets scaling.mode: External and spec.replicas: ' "
        f"+ string({_WARN_ROLE}.spec.replicas) + ' — spec.replicas is ignored; drive replicas "
        f"via DisaggregatedSetRoleScaler \"' + object.metadata.name + '-' + {_WARN_ROLE}.name "
        "+ '\" instead'"
    ),
    target="policy",
)


def crd_rules_at(scope: tuple[str, ...]) -> list[Rule]:
    return [r for r in RULES if r.target == "crd" and r.scope == scope]


def policy_rules() -> list[Rule]:
    return [r for r in RULES if r.target == "policy"]
