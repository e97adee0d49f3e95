"""DisaggregatedSet admission cases: what upstream's webhook and CRD accept and reject
(``pkg/webhooks/disaggregatedset/*_test.go``, ``test/integration/webhooks/
disaggregatedset_test.go``, e2e :130), plus the checks this project adds. Each case names the
reported field path and a part of the message; the unit tests check ``lws-operator validate``
with them, the cluster tests the API server."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from lws_operator.api import constants as lc
from lws_operator.api import ds_rules

EXAMPLE = Path(__file__).parents[3] / "examples" / "disaggregatedset-prefill-decode.yaml"


def role(name: str, replicas: int = 1, **spec: Any) -> dict[str, Any]:
    return {
        "name": name,
        "spec": {
            "replicas": replicas,
            "leaderWorkerTemplate": {
                "workerTemplate": {
                    "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}
                }
            },
            **spec,
        },
    }


def ds(name: str = "pd", *roles: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "disaggregatedset.x-k8s.io/v1",
        "kind": "DisaggregatedSet",
        "metadata": {"name": name},
        "spec": {"roles": list(roles) or [role("prefill"), role("decode")], **spec},
    }


def ruc(**values: Any) -> dict[str, Any]:
    return {"rolloutStrategy": {"rollingUpdateConfiguration": values}}


def with_annotation(where: str, key: str = lc.EXCLUSIVE_KEY_ANNOTATION) -> dict[str, Any]:
    r = role("prefill")
    lwt = r["spec"]["leaderWorkerTemplate"]
    target = {
        "role": r,
        "worker": lwt["workerTemplate"],
        "leader": lwt.setdefault("leaderTemplate", copy.deepcopy(lwt["workerTemplate"])),
    }[where]
    target.setdefault("metadata", {})["annotations"] = {key: "topology.kubernetes.io/zone"}
    return r


PLACEMENT = {"type": "ExclusiveSlice", "topology": "topology.kubernetes.io/zone"}
EXTERNAL = {"scaling": {"mode": "External"}}


@dataclass(frozen=True)
class Case:
    name: str
    obj: dict[str, Any]
    path: str | None = None
    """None: accepted."""
    message: str = ""
    old: dict[str, Any] | None = None
    warning: str | None = None

    def __str__(self) -> str:
        return self.name


def _update(old: dict[str, Any], change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    new = copy.deepcopy(old)
    change(new)
    return new


_annotated = ds("pd", with_annotation("role"), role("decode"))
_placed = ds("pd", placementPolicy=PLACEMENT)

VALID = [
    Case("the example", yaml.safe_load(EXAMPLE.read_text())),
    Case("two roles", ds()),
    Case("every Static role at 0 (paused)", ds("pd", role("a", 0), role("b", 0))),
    Case(
        "an External role at 0 beside Static ones",
        ds("pd", {**role("a", 0), **EXTERNAL}, role("b", 2)),
    ),
    Case("placement policy alone", _placed),
    Case("LWS exclusive-topology annotation alone", _annotated),
    Case(
        "percentages",
        ds("pd", role("a", 4, **ruc(maxSurge="50%", maxUnavailable="25%")), role("b")),
    ),
    Case(
        "percentages with leading zeros, up to maxLength",
        ds("pd", role("a", 4, **ruc(maxSurge="0100%", maxUnavailable="0" * 61 + "99%")), role("b")),
    ),
    Case("partition 0", ds("pd", role("a", 2, **ruc(partition=0)), role("b"))),
    Case(
        "External with replicas > 1 is a warning",
        ds("pd", {**role("prefill", 3), **EXTERNAL}, role("decode")),
        warning='role "prefill" sets scaling.mode: External and spec.replicas: 3',
    ),
]

INVALID = [
    Case(
        "partition",
        ds("pd", role("a", 2, **ruc(partition=1)), role("b")),
        "spec.roles[0].spec.rolloutStrategy.rollingUpdateConfiguration.partition",
        ds_rules.PARTITION_MESSAGE,
    ),
    Case(
        "Static replicas neither all zero nor all non-zero",
        ds("pd", role("a", 0), role("b", 1)),
        "spec.roles",
        ds_rules.REPLICAS_MESSAGE,
    ),
    Case(
        "slices with an External role",
        ds("pd", {**role("a"), **EXTERNAL}, role("b"), slices=2),
        "spec.slices",
        ds_rules.SLICES_MESSAGE,
    ),
    Case(
        "placement without topology",
        ds("pd", placementPolicy={"type": "ExclusiveTopology"}),
        "spec.placementPolicy.topology",
        ds_rules.TOPOLOGY_MESSAGE,
    ),
    *(
        Case(
            f"placement and {key.rsplit('/', 1)[1]} on the {where}",
            ds("pd", with_annotation(where, key), role("decode"), placementPolicy=PLACEMENT),
            "spec.roles",
            ds_rules.EXCLUSIVE_MESSAGE,
        )
        for where, key in (
            ("role", lc.EXCLUSIVE_KEY_ANNOTATION),
            ("worker", lc.EXCLUSIVE_KEY_ANNOTATION),
            ("leader", lc.SUBGROUP_EXCLUSIVE_KEY_ANNOTATION),
        )
    ),
    Case(
        "adding an exclusive-topology annotation to a set with placement",
        _update(
            _placed, lambda o: o["spec"].update(roles=[with_annotation("role"), role("decode")])
        ),
        "spec.roles",
        ds_rules.EXCLUSIVE_MESSAGE,
        old=_placed,
    ),
    Case(
        "adding placement to a set with an exclusive-topology annotation",
        _update(_annotated, lambda o: o["spec"].update(placementPolicy=PLACEMENT)),
        "spec.roles",
        ds_rules.EXCLUSIVE_MESSAGE,
        old=_annotated,
    ),
    Case(
        "maxSurge and maxUnavailable both 0",
        ds("pd", role("prefill", 2, **ruc(maxSurge=0, maxUnavailable=0)), role("b")),
        "spec.roles",
        "role prefill: " + ds_rules.BOTH_ZERO_MESSAGE,
    ),
    Case(
        "maxUnavailable 0% and maxSurge 0",
        ds("pd", role("prefill", 2, **ruc(maxSurge=0, maxUnavailable="0%")), role("b")),
        "spec.roles",
        "role prefill: " + ds_rules.BOTH_ZERO_MESSAGE,
    ),
    Case(
        "maxSurge above 100%",
        ds("pd", role("a", 2, **ruc(maxSurge="150%")), role("b")),
        "spec.roles[0].spec.rolloutStrategy.rollingUpdateConfiguration.maxSurge",
        "must not be greater than 100%",
    ),
    Case(
        "maxUnavailable 101% with a leading zero, in the second role",
        ds("pd", role("a"), role("b", 2, **ruc(maxUnavailable="0101%"))),
        "spec.roles[1].spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable",
        "must not be greater than 100%",
    ),
    Case(
        "maxSurge of 63 nines",
        ds("pd", role("a", 2, **ruc(maxSurge="9" * 63 + "%")), role("b")),
        "spec.roles[0].spec.rolloutStrategy.rollingUpdateConfiguration.maxSurge",
        "must not be greater than 100%",
    ),
    Case(
        "maxSurge with a line break among its digits",
        ds("pd", role("a", 2, **ruc(maxSurge="1\n0%")), role("b")),
        "spec.roles[0].spec.rolloutStrategy.rollingUpdateConfiguration.maxSurge",
        "must be an integer or a percentage",
    ),
    Case(
        "maxUnavailable ending in two percent signs",
        ds("pd", role("a", 2, **ruc(maxUnavailable="5%%")), role("b")),
        "spec.roles[0].spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable",
        "must be an integer or a percentage",
    ),
    Case(
        "negative maxUnavailable",
        ds("pd", role("a", 2, **ruc(maxUnavailable=-1)), role("b")),
        "spec.roles[0].spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable",
        "must be >= 0",
    ),
    Case(
        "a name that is not a DNS label",
        ds("9pd"),
        "metadata.name",
        ds_rules.NAME_MESSAGE,
    ),
    Case(
        "a private Service name over 63 characters",
        ds("p" * 40, role("prefill"), role("decode-with-a-long-name")),
        "spec.roles",
        ds_rules.SERVICE_NAME_MESSAGE,
    ),
    Case(
        "an External role's scaler name over 253 characters",
        ds("p" * 200, {**role("a" * 60), **EXTERNAL}, role("b")),
        "spec.roles",
        ds_rules.SCALER_NAME_MESSAGE,
    ),
    Case("one role", ds("pd", role("a")), "spec.roles", "should have at least 2 items"),
    Case(
        "a role name that is not a DNS label",
        ds("pd", role("Prefill"), role("b")),
        "spec.roles[0].name",
        "should match",
    ),
    Case("no slices", ds(slices=0), "spec.slices", "should be greater than or equal to 1"),
    Case(
        "a role without spec",
        ds("pd", {"name": "a"}, role("b")),
        "spec.roles[0].spec",
        "Required value",
    ),
]
