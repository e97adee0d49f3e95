"""Every validation rule of the LeaderWorkerSet API, written twice side by side: as a CEL
expression the API server evaluates, and as a Python check that gives the same verdict and
message offline. Most rules are CRD ``x-kubernetes-validations``; those that read annotations
(which CRD rules cannot see) or scale percentages against replicas (too costly for the CRD's
estimated CEL budget) are ValidatingAdmissionPolicy validations.

The rules are those of upstream's LWS validating webhook
(``pkg/webhooks/leaderworkerset_webhook.go``: generalValidate, ValidateUpdate) plus
the fixes listed in ``docs/compatibility.md``. A rule's error is reported at
``scope + field``; the message says what is wrong and how to fix it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from lws_operator.api import constants as c
from lws_operator.api.intstr import PERCENT_PATTERN, scaled_value
from lws_operator.api.models import (
    LeaderWorkerSet,
    LeaderWorkerSetSpec,
    LeaderWorkerTemplate,
    RestartPolicy,
    RollingUpdateConfiguration,
    SubGroupPolicy,
    SubGroupPolicyType,
)

Reason = Literal["FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired"]
# "none": a plain rule. "update": uses oldSelf, so the API server evaluates it only on updates
# where the old value exists. "optional": uses oldSelf with optionalOldSelf, evaluated always.
Transition = Literal["none", "update", "optional"]
# "crd": an x-kubernetes-validations rule on the CRD schema node at ``scope``.
# "policy": a ValidatingAdmissionPolicy validation (CEL over object/oldObject).
Target = Literal["crd", "policy"]

# check(new value at scope, old value at scope or None) -> error message, or None when valid.
Check = Callable[[Any, Any], "str | None"]


@dataclass(frozen=True)
class Rule:
    scope: tuple[str, ...]
    field: tuple[str, ...]
    cel: str
    message: str
    check: Check
    reason: Reason = "FieldValueInvalid"
    message_expression: str | None = None
    transition: Transition = "none"
    target: Target = "crd"

    @property
    def path(self) -> str:
        """The reported field path, e.g. ``spec.leaderWorkerTemplate.size``."""
        return ".".join(self.scope + self.field)


def _cel_string(text: str) -> str:
    """A CEL string literal (CEL processes backslash escapes, as in ``'\\.'`` for a regex)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


# --- int-or-percent values ------------------------------------------------------------------

# A valid percentage that is at most 100%, leading zeros allowed as strconv.Atoi allows them.
PERCENT_MAX_100_PATTERN = r"^0*([0-9]{1,2}|100)%$"


def _scaled_or_none(value: int | str, replicas: int, *, round_up: bool) -> int | None:
    """:func:`scaled_value` as the CEL rules (:func:`_cel_scaled`) read a value: an int as is
    (a negative one is refused by a rule of its own), a percentage of at most 100% scaled, and
    anything else None (refused by the rules above, as negative replicas are)."""
    if isinstance(value, int):
        return value
    if not re.fullmatch(PERCENT_MAX_100_PATTERN, value):
        return None
    try:
        return scaled_value(value, replicas, round_up=round_up)
    except ValueError:
        return None


def _cel_scaled(v: str, replicas: str, *, round_up: bool) -> str:
    """CEL of :func:`_scaled_or_none`; -1 stands for None. Policy rules only: on a CRD, string
    functions over an int-or-string are costed at the maximum request size, which puts rules
    that parse percentages over the CRD's cost budget."""
    pct = f"int({v}.substring(0, size({v}) - 1))"
    scaled = f"({replicas} * {pct} + 99) / 100" if round_up else f"{replicas} * {pct} / 100"
    return (
        f"type({v}) == int ? int({v}) : "
        f"({v}.matches({_cel_string(PERCENT_MAX_100_PATTERN)}) ? {scaled} : -1)"
    )


# The two CEL rules below run on the CRD, where the static cost estimator sizes an
# x-kubernetes-int-or-string value as a whole request and ignores its maxLength
# (estimateMaxStringLengthPerRequest in kubernetes/kubernetes
# staging/src/k8s.io/apiserver/pkg/cel/common/schemas.go), and charges `s.matches(re)` as
# len(s) * 0.1 * ceil(len(re) * 0.25) and `a != b` on strings as the smaller size * 0.1
# (github.com/google/cel-go checker/cost.go); `x in [list]` costs the list's length. Inside
# DisaggregatedSet's roles (maxItems 10) one string traversal is ~31% of a rule's budget
# (StaticEstimatedCostLimit, staging/src/k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/
# validation/validation.go), so the rules are written to traverse the value at most twice:
# `type(self) in [int]` rather than `type(self) != string` (compared as a string of the value's
# size), a 3-character regex in _cel_percent, and double() rather than a second regex.


# A non-digit followed by any character but a newline.
_NON_DIGIT_NOT_LAST = r"\D."


def _cel_percent(v: str) -> str:
    """CEL for ``v`` matching PERCENT_PATTERN (``^[0-9]+%$``), costed as one traversal: given a
    last '%', a non-digit anywhere before it is followed by some character other than '\\n'
    (the last non-digit before the '%' is followed by a digit or the '%'), so ``\\D.`` finds
    it."""
    return f"size({v}) > 1 && {v}.endsWith('%') && !{v}.matches({_cel_string(_NON_DIGIT_NOT_LAST)})"


def _cel_percent_at_most_100(v: str) -> str:
    """CEL for a string matching PERCENT_PATTERN being at most 100% (PERCENT_MAX_100_PATTERN,
    leading zeros allowed). double() never fails here: the CRD's maxLength (64) is checked
    first, and a failed maxLength stops the CRD rules (hasBlockingErr in
    staging/src/k8s.io/apiextensions-apiserver/pkg/registry/customresource/strategy.go), so
    the digits are far below double's overflow (309 significant digits); an integer up to 63
    digits rounds to a double monotonically, so ``<= 100.0`` is exact."""
    return f"double({v}.substring(0, size({v}) - 1)) <= 100.0"


def _int_or_percent_rules(scope: tuple[str, ...], name: str) -> list[Rule]:
    here = (*scope, name)
    return [
        Rule(
            here,
            (),
            "type(self) != int || self >= 0",
            "must be >= 0",
            lambda v, _o: "must be >= 0" if isinstance(v, int) and v < 0 else None,
        ),
        Rule(
            here,
            (),
            f"type(self) in [int] || ({_cel_percent('self')})",
            'must be an integer or a percentage such as "25%"',
            lambda v, _o: (
                'must be an integer or a percentage such as "25%"'
                if isinstance(v, str) and not re.fullmatch(PERCENT_PATTERN, v)
                else None
            ),
        ),
        Rule(
            here,
            (),
            f"type(self) in [int] || !({_cel_percent('self')}) || "
            f"{_cel_percent_at_most_100('self')}",
            "must not be greater than 100%",
            lambda v, _o: (
                "must not be greater than 100%"
                if isinstance(v, str)
                and re.fullmatch(PERCENT_PATTERN, v)
                and not re.fullmatch(PERCENT_MAX_100_PATTERN, v)
                else None
            ),
        ),
    ]


# --- metadata.name --------------------------------------------------------------------------

DNS1035_PATTERN = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"
_DNS1035_MESSAGE = (
    "must be a DNS-1035 label: lowercase letters, digits and '-', starting with a letter and "
    "ending with a letter or digit (it names the headless Service)"
)


def _check_dns1035(lws: LeaderWorkerSet, old: LeaderWorkerSet | None) -> str | None:
    if old is not None:  # names never change; check only at creation
        return None
    return None if re.fullmatch(DNS1035_PATTERN, lws.name) else _DNS1035_MESSAGE


def _digits(n: int) -> int:
    return len(str(n)) if n > 0 else 1


def max_name_length(spec: LeaderWorkerSetSpec) -> int:
    """The longest LeaderWorkerSet name whose pods can be created.

    The StatefulSet controller labels each pod ``controller-revision-hash=<sts name>-<hash>``
    (hash up to 10 characters) and a label value has at most 63 characters. The leader
    StatefulSet is named ``<lws>``; the worker StatefulSets ``<lws>-<group index>``, where the
    largest index is replicas-1 plus the surge groups of a rolling update.
    """
    if spec.leader_worker_template.size <= 1:
        return c.DNS_LABEL_MAX - 1 - c.STS_REVISION_HASH_MAX
    return c.DNS_LABEL_MAX - 2 - c.STS_REVISION_HASH_MAX - _digits(max_group_index(spec))


def max_group_index(spec: LeaderWorkerSetSpec) -> int:
    replicas = spec.replicas
    surge = _scaled_or_none(
        spec.rollout_strategy.rolling_update_configuration.max_surge, replicas, round_up=True
    )
    return replicas - 1 + min(surge or 0, replicas)


_NAME_LENGTH_TEMPLATE = (
    "must be no more than {limit} characters for these replicas, size and maxSurge: the "
    "StatefulSet controller labels every pod "
    "controller-revision-hash=<name>[-<group index>]-<10-character hash>, which must fit in 63 "
    "characters"
)


def _name_length_message(limit: int) -> str:
    return _NAME_LENGTH_TEMPLATE.format(limit=limit)


def _name_length_message_cel(limit: str) -> str:
    before, after = _NAME_LENGTH_TEMPLATE.split("{limit}")
    return f"{_cel_string(before)} + string({limit}) + {_cel_string(after)}"


def _check_name_length(lws: LeaderWorkerSet, old: LeaderWorkerSet | None) -> str | None:
    limit = max_name_length(lws.spec)
    if len(lws.name) <= limit:
        return None
    # Ratchet: an object that already broke the limit (e.g. created by upstream) stays editable.
    if old is not None and len(old.name) > max_name_length(old.spec):
        return None
    return _name_length_message(limit)


# --- spec ----------------------------------------------------------------------------------

_SPEC = ("spec",)
_LWT = ("spec", "leaderWorkerTemplate")
_SGP = (*_LWT, "subGroupPolicy")
_RUC = ("spec", "rolloutStrategy", "rollingUpdateConfiguration")


_POD_COUNT_MESSAGE = (
    "replicas * leaderWorkerTemplate.size (the number of pods) must not exceed 2147483647; "
    "lower replicas or size"
)


def _check_pod_count(spec: LeaderWorkerSetSpec, _old: Any) -> str | None:
    replicas, size = spec.replicas, spec.leader_worker_template.size
    if replicas > 0 and size > c.MAX_INT32 // replicas:
        return _POD_COUNT_MESSAGE
    return None


_BOTH_ZERO_MESSAGE = (
    "must not be 0 when maxSurge is 0, or no group could ever be replaced; set maxUnavailable "
    "or maxSurge to at least 1 (percentages of replicas round down for maxUnavailable, up for "
    "maxSurge)"
)


def _check_both_zero(lws: LeaderWorkerSet, _old: Any) -> str | None:
    replicas = lws.spec.replicas
    ruc: RollingUpdateConfiguration = lws.spec.rollout_strategy.rolling_update_configuration
    if replicas == 0:
        return None
    unavailable = _scaled_or_none(ruc.max_unavailable, replicas, round_up=False)
    surge = _scaled_or_none(ruc.max_surge, replicas, round_up=True)
    return _BOTH_ZERO_MESSAGE if unavailable == 0 and surge == 0 else None


# --- subgroups -----------------------------------------------------------------------------

_SG_REQUIRED = "must be set with subGroupPolicy: the number of pods in each subgroup"
_SG_TOO_LARGE = "must not be larger than leaderWorkerTemplate.size"
_SG_DIVISIBLE = "leaderWorkerTemplate.size or size - 1 must be divisible by subGroupSize"
_SG_LEADER_EXCLUDED = (
    "leaderWorkerTemplate.size - 1 must be divisible by subGroupSize when subGroupPolicyType "
    "is LeaderExcluded (the leader belongs to no subgroup)"
)
_SG_IMMUTABLE = "is immutable; delete and recreate the LeaderWorkerSet to change it"
_SGP_ADDED = (
    "cannot be added to an existing LeaderWorkerSet; delete and recreate it to use subgroups"
)
_SGP_REMOVED = (
    "cannot be removed from an existing LeaderWorkerSet; delete and recreate it without subgroups"
)

# CEL guard: a usable subGroupSize (present and >= 1; otherwise another rule reports it).
_SG = "self.subGroupPolicy.subGroupSize"
_SG_GUARD = f"!has(self.subGroupPolicy) || !has({_SG}) || {_SG} < 1"


def _sub_group_size(lwt: LeaderWorkerTemplate) -> int | None:
    sgp = lwt.sub_group_policy
    if sgp is None or sgp.sub_group_size is None or sgp.sub_group_size < 1:
        return None
    return sgp.sub_group_size


def _check_sg_too_large(lwt: LeaderWorkerTemplate, _old: Any) -> str | None:
    sg = _sub_group_size(lwt)
    return _SG_TOO_LARGE if sg is not None and sg > lwt.size else None


def _check_sg_divisible(lwt: LeaderWorkerTemplate, _old: Any) -> str | None:
    sg = _sub_group_size(lwt)
    if sg is None or lwt.size % sg == 0 or (lwt.size - 1) % sg == 0:
        return None
    return _SG_DIVISIBLE


def _check_sg_leader_excluded(lwt: LeaderWorkerTemplate, _old: Any) -> str | None:
    sg = _sub_group_size(lwt)
    if sg is None or lwt.sub_group_policy is None:
        return None
    excluded = lwt.sub_group_policy.sub_group_policy_type == SubGroupPolicyType.LEADER_EXCLUDED
    return _SG_LEADER_EXCLUDED if excluded and (lwt.size - 1) % sg != 0 else None


def _check_sgp_added(lwt: LeaderWorkerTemplate, old: LeaderWorkerTemplate) -> str | None:
    return _SGP_ADDED if lwt.sub_group_policy and not old.sub_group_policy else None


def _check_sgp_removed(lwt: LeaderWorkerTemplate, old: LeaderWorkerTemplate) -> str | None:
    return _SGP_REMOVED if old.sub_group_policy and not lwt.sub_group_policy else None


def _check_sg_immutable(sgp: SubGroupPolicy, old: SubGroupPolicy) -> str | None:
    if sgp.sub_group_size is None or old.sub_group_size is None:
        return None
    return _SG_IMMUTABLE if sgp.sub_group_size != old.sub_group_size else None


# --- restart budget (upstream KEP-820) -----------------------------------------------------

_MGR_POLICY = (
    "may be set only with restartPolicy RecreateGroupOnPodRestart (it bounds that policy's "
    "group recreations); remove maxGroupRestarts or set that restartPolicy"
)


def _check_mgr_policy(lwt: LeaderWorkerTemplate, _old: Any) -> str | None:
    if lwt.max_group_restarts is None:
        return None
    ok = lwt.restart_policy == RestartPolicy.RECREATE_GROUP_ON_POD_RESTART
    return None if ok else _MGR_POLICY


# --- annotations (ValidatingAdmissionPolicy: CRD rules cannot read metadata.annotations) --------

# A label key: optional DNS-subdomain prefix and '/', then a name of at most 63 characters.
LABEL_KEY_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
_LABEL_KEY_MAX = 253 + 1 + 63
_TOPOLOGY_KEY_MESSAGE = (
    "must be a node label key such as topology.kubernetes.io/zone: pods of a group are placed "
    "in the same domain of that label"
)
_SUBGROUP_TOPOLOGY_MESSAGE = (
    "requires spec.leaderWorkerTemplate.subGroupPolicy; add a subGroupPolicy or remove the "
    "annotation"
)


def _annotation_path(key: str) -> tuple[str, ...]:
    return ("metadata", f"annotations[{key}]")


def _is_label_key(value: str) -> bool:
    return len(value) <= _LABEL_KEY_MAX and re.fullmatch(LABEL_KEY_PATTERN, value) is not None


def _topology_key_rule(key: str) -> Rule:
    def check(lws: LeaderWorkerSet, old: LeaderWorkerSet | None) -> str | None:
        value = lws.annotations.get(key)
        if value is None or (old is not None and old.annotations.get(key) == value):
            return None  # absent, or unchanged (ratchet: an existing object stays editable)
        return None if _is_label_key(value) else _TOPOLOGY_KEY_MESSAGE

    ann = "object.metadata.annotations"
    old_ann = "oldObject.metadata.annotations"
    cel = (
        f"!has({ann}) || !('{key}' in {ann}) || "
        f"(oldObject != null && has({old_ann}) && '{key}' in {old_ann} && "
        f"{old_ann}['{key}'] == {ann}['{key}']) || "
        f"(size({ann}['{key}']) <= {_LABEL_KEY_MAX} && "
        f"{ann}['{key}'].matches({_cel_string(LABEL_KEY_PATTERN)}))"
    )
    return Rule((), _annotation_path(key), cel, _TOPOLOGY_KEY_MESSAGE, check, target="policy")


def _check_subgroup_topology(lws: LeaderWorkerSet, _old: Any) -> str | None:
    has_annotation = c.SUBGROUP_EXCLUSIVE_KEY_ANNOTATION in lws.annotations
    if has_annotation and lws.spec.leader_worker_template.sub_group_policy is None:
        return _SUBGROUP_TOPOLOGY_MESSAGE
    return None


# --- ValidatingAdmissionPolicy variables --------------------------------------------------

_RUC_OF = "{o}.spec.rolloutStrategy.rollingUpdateConfiguration"


def _limit_variables(o: str, prefix: str) -> list[tuple[str, str]]:
    """CEL of :func:`max_name_length` for the object ``o``, as policy variables. ``oldObject``
    is null on CREATE, so its variables are guarded."""

    def guard(expr: str) -> str:
        return f"{o} == null ? 0 : ({expr})" if o == "oldObject" else expr

    replicas = f"{o}.spec.replicas"
    surge = _cel_scaled(f"{_RUC_OF.format(o=o)}.maxSurge", replicas, round_up=True)
    v_surge, v_index = f"variables.{prefix}Surge", f"variables.{prefix}MaxGroupIndex"
    leader_only = c.DNS_LABEL_MAX - 1 - c.STS_REVISION_HASH_MAX
    with_workers = c.DNS_LABEL_MAX - 2 - c.STS_REVISION_HASH_MAX
    return [
        (f"{prefix}Surge", guard(surge)),
        (
            f"{prefix}MaxGroupIndex",
            guard(
                f"{replicas} - 1 + ({v_surge} < 0 ? 0 : "
                f"({v_surge} < {replicas} ? {v_surge} : {replicas}))"
            ),
        ),
        (
            f"{prefix}NameLimit",
            guard(
                f"{o}.spec.leaderWorkerTemplate.size <= 1 ? {leader_only} : "
                f"{with_workers} - ({v_index} <= 0 ? 1 : size(string({v_index})))"
            ),
        ),
    ]


# Evaluated lazily, at most once per admission request; rules read them as variables.<name>.
POLICY_VARIABLES: tuple[tuple[str, str], ...] = (
    *_limit_variables("object", "new"),
    *_limit_variables("oldObject", "old"),
    (
        "unavailable",
        _cel_scaled(
            _RUC_OF.format(o="object") + ".maxUnavailable", "object.spec.replicas", round_up=False
        ),
    ),
)


# --- The rule table --------------------------------------------------------------------------

RULES: tuple[Rule, ...] = (
    # metadata.name (root rules may read metadata.name, nothing else of metadata).
    Rule(
        (),
        ("metadata", "name"),
        f"oldSelf.hasValue() || self.metadata.name.matches({_cel_string(DNS1035_PATTERN)})",
        _DNS1035_MESSAGE,
        _check_dns1035,
        transition="optional",
    ),
    # Policy rules below read spec.replicas; a policy (unlike CRD rules) does not see updates
    # through the scale subresource, so, as with upstream's webhook, HPA scaling is never blocked.
    Rule(
        (),
        ("metadata", "name"),
        "size(object.metadata.name) <= variables.newNameLimit || (oldObject != null && "
        "size(oldObject.metadata.name) > variables.oldNameLimit)",
        "is too long for these replicas, size and maxSurge: pod labels built from it must fit "
        "in 63 characters",
        _check_name_length,
        message_expression=_name_length_message_cel("variables.newNameLimit"),
        target="policy",
    ),
    # spec.replicas
    Rule(
        (*_SPEC, "replicas"),
        (),
        "self >= 0",
        "must be >= 0",
        lambda v, _o: "must be >= 0" if v < 0 else None,
    ),
    Rule(
        (*_SPEC, "replicas"),
        (),
        f"self <= {c.MAX_REPLICAS}",
        f"must be <= {c.MAX_REPLICAS}",
        lambda v, _o: f"must be <= {c.MAX_REPLICAS}" if v > c.MAX_REPLICAS else None,
    ),
    Rule(
        _SPEC,
        ("replicas",),
        f"self.replicas <= 0 || self.leaderWorkerTemplate.size <= {c.MAX_INT32} / self.replicas",
        _POD_COUNT_MESSAGE,
        _check_pod_count,
    ),
    # spec.leaderWorkerTemplate.size
    Rule(
        (*_LWT, "size"),
        (),
        "self >= 1",
        "must be >= 1",
        lambda v, _o: "must be >= 1" if v < 1 else None,
    ),
    # spec.leaderWorkerTemplate.maxGroupRestarts (upstream KEP-820)
    Rule(
        (*_LWT, "maxGroupRestarts"),
        (),
        "self >= 0",
        "must be >= 0",
        lambda v, _o: "must be >= 0" if v < 0 else None,
    ),
    Rule(
        _LWT,
        ("maxGroupRestarts",),
        "!has(self.maxGroupRestarts) || self.restartPolicy == 'RecreateGroupOnPodRestart'",
        _MGR_POLICY,
        _check_mgr_policy,
        reason="FieldValueForbidden",
    ),
    # spec.rolloutStrategy.rollingUpdateConfiguration
    Rule(
        (*_RUC, "partition"),
        (),
        "self >= 0",
        "must be >= 0",
        lambda v, _o: "must be >= 0" if v < 0 else None,
    ),
    *_int_or_percent_rules(_RUC, "maxUnavailable"),
    *_int_or_percent_rules(_RUC, "maxSurge"),
    Rule(
        (),
        ("spec", "rolloutStrategy", "rollingUpdateConfiguration", "maxUnavailable"),
        "object.spec.replicas == 0 || variables.unavailable != 0 || variables.newSurge != 0",
        _BOTH_ZERO_MESSAGE,
        _check_both_zero,
        target="policy",
    ),
    # spec.leaderWorkerTemplate.subGroupPolicy
    Rule(
        _SGP,
        ("subGroupSize",),
        "has(self.subGroupSize)",
        _SG_REQUIRED,
        lambda v, _o: _SG_REQUIRED if v.sub_group_size is None else None,
        reason="FieldValueRequired",
    ),
    Rule(
        (*_SGP, "subGroupSize"),
        (),
        "self >= 1",
        "must be >= 1",
        lambda v, _o: "must be >= 1" if v < 1 else None,
    ),
    Rule(
        _LWT,
        ("subGroupPolicy", "subGroupSize"),
        f"{_SG_GUARD} || {_SG} <= self.size",
        _SG_TOO_LARGE,
        _check_sg_too_large,
    ),
    Rule(
        _LWT,
        ("subGroupPolicy", "subGroupSize"),
        f"{_SG_GUARD} || self.size % {_SG} == 0 || (self.size - 1) % {_SG} == 0",
        _SG_DIVISIBLE,
        _check_sg_divisible,
    ),
    Rule(
        _LWT,
        ("subGroupPolicy", "subGroupSize"),
        f"{_SG_GUARD} || self.subGroupPolicy.subGroupPolicyType != 'LeaderExcluded' || "
        f"(self.size - 1) % {_SG} == 0",
        _SG_LEADER_EXCLUDED,
        _check_sg_leader_excluded,
    ),
    Rule(
        _LWT,
        ("subGroupPolicy",),
        "!has(self.subGroupPolicy) || has(oldSelf.subGroupPolicy)",
        _SGP_ADDED,
        _check_sgp_added,
        reason="FieldValueForbidden",
        transition="update",
    ),
    Rule(
        _LWT,
        ("subGroupPolicy",),
        "has(self.subGroupPolicy) || !has(oldSelf.subGroupPolicy)",
        _SGP_REMOVED,
        _check_sgp_removed,
        reason="FieldValueForbidden",
        transition="update",
    ),
    Rule(
        _SGP,
        ("subGroupSize",),
        "!has(self.subGroupSize) || !has(oldSelf.subGroupSize) || "
        "self.subGroupSize == oldSelf.subGroupSize",
        _SG_IMMUTABLE,
        _check_sg_immutable,
        reason="FieldValueForbidden",
        transition="update",
    ),
    # Annotations.
    Rule(
        (),
        _annotation_path(c.SUBGROUP_EXCLUSIVE_KEY_ANNOTATION),
        "!has(object.metadata.annotations) || "
        f"!('{c.SUBGROUP_EXCLUSIVE_KEY_ANNOTATION}' in object.metadata.annotations) || "
        "has(object.spec.leaderWorkerTemplate.subGroupPolicy)",
        _SUBGROUP_TOPOLOGY_MESSAGE,
        _check_subgroup_topology,
        target="policy",
    ),
    _topology_key_rule(c.EXCLUSIVE_KEY_ANNOTATION),
    _topology_key_rule(c.SUBGROUP_EXCLUSIVE_KEY_ANNOTATION),
)


def crd_rules_at(scope: tuple[str, ...]) -> list[Rule]:
    return [r for r in RULES if r.target == "crd" and r.scope == scope]


def policy_rules() -> list[Rule]:
    return [r for r in RULES if r.target == "policy"]
