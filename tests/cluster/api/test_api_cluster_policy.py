"""The admission policy's CEL type-checks against the CRD schema without warnings (the
API server type-checks policies in the background and reports in the policy's status)."""

from __future__ import annotations

from typing import Any

from lws_operator.api.admission_policy import POLICY_NAME
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_testbed.wait import wait_for_objects
from tests.cluster.conftest import ADMISSION


def _type_checked(objs: dict[str, dict[str, Any]]) -> bool:
    policy = objs.get(POLICY_NAME, {})
    status = policy.get("status", {})
    generation = policy.get("metadata", {}).get("generation")
    return status.get("observedGeneration") == generation and "typeChecking" in status


async def test_policy_type_checks_without_warnings(kube: Kube, lws_api: None) -> None:
    objs = await wait_for_objects(
        kube,
        resource_path(ADMISSION, "validatingadmissionpolicies"),
        _type_checked,
        field_selector=f"metadata.name={POLICY_NAME}",
        timeout=60,
        what="the admission policy to be type-checked",
    )
    type_checking = objs[POLICY_NAME]["status"]["typeChecking"]
    assert not type_checking.get("expressionWarnings"), type_checking
