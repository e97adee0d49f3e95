"""Exclusive-placement terms (upstream's SetExclusiveAffinities, pkg/webhooks/pod_webhook.go; its
unit tests TestSetExclusiveAffinities and TestExclusiveAffinityApplied, the latter adapted: a term
counts as applied when it is on the topology key *and* selects on the LWS label key, not merely on
the topology key)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from lws_operator.api import constants as c
from lws_operator.plan.lws import placement
from lws_operator.plan.lws.podview import PodMutationError, PodView

KEY = c.GROUP_UNIQUE_HASH_LABEL
AFFINITY, ANTI = placement.exclusive_terms(KEY, "test-key", "topologyKey")


def _with_terms(affinity: list[Any] | None, anti: list[Any] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"affinity": {}}
    if affinity is not None:
        spec["affinity"]["podAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": affinity
        }
    if anti is not None:
        spec["affinity"]["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": anti
        }
    return {"metadata": {"name": "p-0"}, "spec": spec}


def _apply(pod: dict[str, Any]) -> dict[str, Any]:
    placement.add_exclusive_terms(PodView(pod), KEY, "test-key", "topologyKey")
    return pod


def test_terms_have_upstream_shape() -> None:
    assert AFFINITY == {
        "labelSelector": {
            "matchExpressions": [{"key": KEY, "operator": "In", "values": ["test-key"]}]
        },
        "topologyKey": "topologyKey",
    }
    assert ANTI == {
        "labelSelector": {
            "matchExpressions": [
                {"key": KEY, "operator": "Exists"},
                {"key": KEY, "operator": "NotIn", "values": ["test-key"]},
            ]
        },
        "topologyKey": "topologyKey",
    }


def test_pod_with_only_the_annotation_gets_both_terms() -> None:
    pod = _apply({"metadata": {"name": "p-0"}, "spec": {}})
    assert pod["spec"]["affinity"] == _with_terms([AFFINITY], [ANTI])["spec"]["affinity"]


def test_existing_affinity_terms_are_kept_and_ours_appended() -> None:
    user = {"topologyKey": "topologyKey"}
    pod = _apply(_with_terms([user], [user]))
    assert pod == _with_terms([user, AFFINITY], [user, ANTI])


@pytest.mark.parametrize(
    ("affinity", "anti", "expected_affinity", "expected_anti"),
    [
        # Both terms present: nothing added (idempotence).
        ([AFFINITY], [ANTI], [AFFINITY], [ANTI]),
        # Only one present: the missing one is added, the present one not duplicated.
        ([AFFINITY], None, [AFFINITY], [ANTI]),
        (None, [ANTI], [AFFINITY], [ANTI]),
        # A term of ours with another value (say, copied into the template) is not contradicted.
        (
            [placement.exclusive_terms(KEY, "stale", "topologyKey")[0]],
            [placement.exclusive_terms(KEY, "stale", "topologyKey")[1]],
            [placement.exclusive_terms(KEY, "stale", "topologyKey")[0]],
            [placement.exclusive_terms(KEY, "stale", "topologyKey")[1]],
        ),
        # Upstream skips both when any term sits on the topology key; we do not.
        ([{"topologyKey": "topologyKey"}], [{"topologyKey": "topologyKey"}], None, None),
        (
            [{"topologyKey": "topologyKey1"}],
            [ANTI],
            [{"topologyKey": "topologyKey1"}, AFFINITY],
            [ANTI],
        ),
    ],
)
def test_terms_are_added_unless_ours_exist(
    affinity: list[Any] | None,
    anti: list[Any] | None,
    expected_affinity: list[Any] | None,
    expected_anti: list[Any] | None,
) -> None:
    pod = _apply(_with_terms(copy.deepcopy(affinity), copy.deepcopy(anti)))
    want_affinity = expected_affinity or [*(affinity or []), AFFINITY]
    want_anti = expected_anti or [*(anti or []), ANTI]
    assert pod == _with_terms(want_affinity, want_anti)


def test_subgroup_terms_on_the_group_topology_are_added() -> None:
    pod = _apply({"metadata": {"name": "p-0"}, "spec": {}})
    view = PodView(pod)
    placement.add_exclusive_terms(view, c.SUBGROUP_UNIQUE_HASH_LABEL, "sg", "topologyKey")
    sub_affinity, sub_anti = placement.exclusive_terms(
        c.SUBGROUP_UNIQUE_HASH_LABEL, "sg", "topologyKey"
    )
    assert pod == {
        "metadata": {"name": "p-0"},
        **_with_terms([AFFINITY, sub_affinity], [ANTI, sub_anti]),
    }


def test_malformed_affinity_is_a_mutation_error() -> None:
    pod = {"metadata": {"name": "p-0"}, "spec": {"affinity": {"podAffinity": []}}}
    with pytest.raises(PodMutationError, match=r"pod p-0: spec\.affinity\.podAffinity must be"):
        _apply(pod)
