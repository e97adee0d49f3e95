"""Defaults the API server applies are exactly upstream's (the CRD defaults of
api/leaderworkerset/v1/leaderworkerset_types.go and the Default of
pkg/webhooks/leaderworkerset_webhook.go)."""

from __future__ import annotations

from typing import Any

from lws_operator.kube.client import Kube
from tests.cluster.conftest import lws_path
from tests.unit.api.lws_testdata import UPSTREAM_DEFAULT_SPEC, base_object


def minimal(name: str) -> dict[str, Any]:
    obj = base_object(name)
    del obj["spec"]["replicas"], obj["spec"]["leaderWorkerTemplate"]["size"]
    return obj


async def test_defaults_of_a_minimal_object(kube: Kube, api_namespace: str) -> None:
    obj = minimal("defaults-minimal")
    created = await kube.create(lws_path(api_namespace), obj)
    stored = await kube.get(lws_path(api_namespace, "defaults-minimal"))
    assert stored["spec"] == created["spec"]
    spec = stored["spec"]
    assert (
        spec["leaderWorkerTemplate"].pop("workerTemplate")
        == (obj["spec"]["leaderWorkerTemplate"]["workerTemplate"])
    )
    assert spec == UPSTREAM_DEFAULT_SPEC


async def test_nested_defaults_and_explicit_values(kube: Kube, api_namespace: str) -> None:
    obj = minimal("defaults-nested")
    obj["spec"]["replicas"] = 3
    obj["spec"]["startupPolicy"] = "LeaderReady"
    obj["spec"]["rolloutStrategy"] = {"rollingUpdateConfiguration": {"maxSurge": 2}}
    lwt = obj["spec"]["leaderWorkerTemplate"]
    lwt.update(size=4, restartPolicy="None", subGroupPolicy={"subGroupSize": 2})
    lwt["workerTemplate"]["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
    spec = (await kube.create(lws_path(api_namespace), obj, dry_run=True))["spec"]
    assert (spec["replicas"], spec["startupPolicy"]) == (3, "LeaderReady")
    assert spec["rolloutStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdateConfiguration": {"partition": 0, "maxUnavailable": 1, "maxSurge": 2},
    }
    stored_lwt = spec["leaderWorkerTemplate"]
    assert (stored_lwt["size"], stored_lwt["restartPolicy"]) == (4, "None")
    assert stored_lwt["subGroupPolicy"] == {"subGroupPolicyType": "LeaderWorker", "subGroupSize": 2}
    # Kubernetes' own defaults inside the pod template, as upstream's CRD has them.
    port = stored_lwt["workerTemplate"]["spec"]["containers"][0]["ports"][0]
    assert port == {"containerPort": 80, "protocol": "TCP"}


async def test_deprecated_restart_policy_is_kept(kube: Kube, api_namespace: str) -> None:
    obj = minimal("defaults-restart-default")
    obj["spec"]["leaderWorkerTemplate"]["restartPolicy"] = "Default"
    spec = (await kube.create(lws_path(api_namespace), obj, dry_run=True))["spec"]
    # Upstream's webhook rewrites it to None; without a webhook it stays (docs/compatibility.md).
    assert spec["leaderWorkerTemplate"]["restartPolicy"] == "Default"


async def test_defaults_are_restored_on_update(kube: Kube, api_namespace: str) -> None:
    obj = minimal("defaults-update")
    obj["spec"]["startupPolicy"] = "LeaderReady"
    obj["spec"]["networkConfig"] = {"subdomainPolicy": "UniquePerReplica"}
    await kube.create(lws_path(api_namespace), obj)
    patched = await kube.patch(
        lws_path(api_namespace, "defaults-update"),
        {"spec": {"startupPolicy": None, "networkConfig": {"subdomainPolicy": None}}},
    )
    assert patched["spec"]["startupPolicy"] == "LeaderCreated"
    assert patched["spec"]["networkConfig"] == {"subdomainPolicy": "Shared"}
