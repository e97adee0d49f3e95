"""The pydantic models: defaults, JSON names, leniency."""

from __future__ import annotations

from typing import Any

import pytest

from lws_operator.api import (
    LeaderWorkerSet,
    LeaderWorkerSetStatus,
    RestartPolicy,
    SubGroupPolicyType,
)
from lws_operator.api import constants as c
from tests.unit.api.lws_testdata import UPSTREAM_DEFAULT_SPEC, base_object


def minimal() -> dict[str, Any]:
    obj = base_object("minimal")
    del obj["spec"]["replicas"], obj["spec"]["leaderWorkerTemplate"]["size"]
    return obj


def test_defaults_are_upstreams() -> None:
    spec = LeaderWorkerSet.model_validate(minimal()).to_dict()["spec"]
    worker = spec["leaderWorkerTemplate"].pop("workerTemplate")
    assert worker == minimal()["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    assert spec == UPSTREAM_DEFAULT_SPEC


def test_nested_defaults_apply_inside_present_objects() -> None:
    obj = minimal()
    obj["spec"]["rolloutStrategy"] = {"rollingUpdateConfiguration": {"maxSurge": "25%"}}
    obj["spec"]["leaderWorkerTemplate"]["subGroupPolicy"] = {"subGroupSize": 1}
    lws = LeaderWorkerSet.model_validate(obj)
    ruc = lws.spec.rollout_strategy.rolling_update_configuration
    assert (ruc.partition, ruc.max_unavailable, ruc.max_surge) == (0, 1, "25%")
    sgp = lws.spec.leader_worker_template.sub_group_policy
    assert sgp is not None and sgp.sub_group_policy_type == SubGroupPolicyType.LEADER_WORKER


def test_explicit_values_are_kept() -> None:
    obj = minimal()
    obj["spec"].update(replicas=3, startupPolicy="LeaderReady")
    obj["spec"]["leaderWorkerTemplate"]["restartPolicy"] = "Default"
    lws = LeaderWorkerSet.model_validate(obj)
    assert lws.spec.replicas == 3
    # Deprecated, accepted and kept as written (upstream's webhook rewrites it to None).
    assert lws.spec.leader_worker_template.restart_policy == RestartPolicy.DEFAULT
    assert lws.to_dict()["spec"]["leaderWorkerTemplate"]["restartPolicy"] == "Default"


def test_round_trip_is_stable() -> None:
    once = LeaderWorkerSet.model_validate(minimal()).to_dict()
    assert LeaderWorkerSet.model_validate(once).to_dict() == once


def test_unknown_fields_and_pod_template_contents_are_tolerated() -> None:
    obj = minimal()
    obj["spec"]["futureField"] = {"x": 1}
    obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["futurePodField"] = True
    obj["status"] = {"readyReplicas": 1, "newStatusField": "x", "conditions": []}
    lws = LeaderWorkerSet.model_validate(obj)
    worker_spec = lws.spec.leader_worker_template.worker_template["spec"]
    assert worker_spec["futurePodField"] is True
    assert lws.status is not None and lws.status.ready_replicas == 1


def test_status_round_trip() -> None:
    status = {
        "conditions": [
            {
                "type": c.CONDITION_AVAILABLE,
                "status": "True",
                "reason": "AllGroupsReady",
                "message": "All replicas are ready",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ],
        "readyReplicas": 2,
        "updatedReplicas": 2,
        "replicas": 2,
        "hpaPodSelector": f"{c.SET_NAME_LABEL}=x,{c.WORKER_INDEX_LABEL}=0",
        "observedGeneration": 3,
    }
    assert LeaderWorkerSetStatus.model_validate(status).to_dict() == status


@pytest.mark.parametrize("value", ["1", 1.0, True])
def test_integers_are_strict(value: object) -> None:
    obj = minimal()
    obj["spec"]["replicas"] = value
    with pytest.raises(ValueError):
        LeaderWorkerSet.model_validate(obj)


def test_constants_match_upstream_spelling() -> None:
    assert c.API_VERSION == "leaderworkerset.x-k8s.io/v1"
    assert c.SET_NAME_LABEL == "leaderworkerset.sigs.k8s.io/name"
    assert c.REVISION_KEY == "leaderworkerset.sigs.k8s.io/template-revision-hash"
    assert c.SUBDOMAIN_POLICY_ANNOTATION == "leaderworkerset.sigs.k8s.io/subdomainPolicy"
    assert c.RECREATE_GROUP_AFTER_START_ANNOTATION == (
        "leaderworkerset.sigs.k8s.io/experimental-recreate-group-after-start"
    )
