"""How the API server serves LeaderWorkerSets: table columns (kubectl get), the published
OpenAPI (kubectl explain), the status and scale subresources."""

from __future__ import annotations

from typing import Any

import pytest

from lws_operator.api import constants as c
from lws_operator.kube.client import ApiError, Kube
from lws_testbed.lws_api import until
from tests.cluster.conftest import lws_path
from tests.unit.api.lws_testdata import base_object

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


async def get_as_table(kube: Kube, path: str) -> dict[str, Any]:
    return await kube.request("GET", path, accept=TABLE)


async def create(kube: Kube, namespace: str, name: str, **spec: Any) -> dict[str, Any]:
    obj = base_object(name)
    obj["spec"].update(spec)
    return await kube.create(lws_path(namespace), obj)


async def test_printer_columns(kube: Kube, api_namespace: str) -> None:
    await create(kube, api_namespace, "table", replicas=3)
    await kube.patch(
        lws_path(api_namespace, "table", "status"),
        {"status": {"readyReplicas": 1, "updatedReplicas": 2, "replicas": 3}},
    )
    table = await get_as_table(kube, lws_path(api_namespace))
    columns = [col["name"] for col in table["columnDefinitions"]]
    assert columns == ["Name", "Ready", "Desired", "Up-to-date", "Age"]
    (row,) = [r for r in table["rows"] if r["cells"][0] == "table"]
    assert row["cells"][1:4] == [1, 3, 2]


async def test_openapi_publishes_the_pod_template_schema(kube: Kube, lws_api: None) -> None:
    """What `kubectl explain lws.spec.leaderWorkerTemplate.workerTemplate.spec` reads."""
    group_version = f"apis/{c.GROUP}/{c.VERSION}"
    found: dict[str, Any] = {}

    async def published() -> bool:
        index = await kube.get("/openapi/v3")
        url = index.get("paths", {}).get(group_version, {}).get("serverRelativeURL")
        if not url:
            return False
        document = await kube.get(url.split("?", 1)[0])
        for schema in document.get("components", {}).get("schemas", {}).values():
            gvks = schema.get("x-kubernetes-group-version-kind", [])
            if {"group": c.GROUP, "version": c.VERSION, "kind": c.KIND} in gvks:
                found.update(schema)
                return True
        return False

    await until(published, timeout=60, what=f"/openapi/v3/{group_version} to list {c.KIND}")
    lwt = found["properties"]["spec"]["properties"]["leaderWorkerTemplate"]["properties"]
    pod_spec = lwt["workerTemplate"]["properties"]["spec"]
    assert "containers" in pod_spec["properties"]
    assert pod_spec["properties"]["containers"]["description"]
    assert "volumeClaimTemplates" in lwt


async def test_status_subresource(kube: Kube, api_namespace: str) -> None:
    created = await create(kube, api_namespace, "status")
    path = lws_path(api_namespace, "status", "status")
    condition = {
        "type": c.CONDITION_AVAILABLE,
        "status": "True",
        "reason": "AllGroupsReady",
        "message": "All replicas are ready",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    patched = await kube.patch(
        path, {"spec": {"replicas": 7}, "status": {"conditions": [condition], "replicas": 2}}
    )
    assert patched["status"]["conditions"] == [condition]
    assert patched["spec"] == created["spec"]  # the status endpoint ignores spec
    assert patched["metadata"]["generation"] == created["metadata"]["generation"]
    with pytest.raises(ApiError) as caught:
        await kube.patch(path, {"status": {"conditions": [{**condition, "reason": "not ok"}]}})
    assert "status.conditions[0].reason" in caught.value.message


async def test_scale_subresource(kube: Kube, api_namespace: str) -> None:
    await create(kube, api_namespace, "scale", replicas=2)
    selector = f"{c.SET_NAME_LABEL}=scale,{c.WORKER_INDEX_LABEL}=0"
    await kube.patch(
        lws_path(api_namespace, "scale", "status"),
        {"status": {"replicas": 2, "hpaPodSelector": selector}},
    )
    scale_path = lws_path(api_namespace, "scale", "scale")
    scale = await kube.get(scale_path)
    assert scale["kind"] == "Scale"
    assert scale["spec"] == {"replicas": 2}
    assert scale["status"] == {"replicas": 2, "selector": selector}
    await kube.patch(scale_path, {"spec": {"replicas": 5}})
    assert (await kube.get(lws_path(api_namespace, "scale")))["spec"]["replicas"] == 5
    with pytest.raises(ApiError) as caught:
        await kube.patch(scale_path, {"spec": {"replicas": 1000001}})
    assert "must be <= 1000000" in caught.value.message


async def test_scaling_is_not_blocked_by_rollout_settings(kube: Kube, api_namespace: str) -> None:
    """Like upstream's webhook, the admission policy does not see the scale subresource: an
    autoscaler may scale to a size at which maxUnavailable 25% rounds down to 0; editing
    the object itself to the same size is rejected with the reason."""
    await create(
        kube,
        api_namespace,
        "scale-rollout",
        replicas=4,
        rolloutStrategy={"rollingUpdateConfiguration": {"maxUnavailable": "25%"}},
    )
    await kube.patch(lws_path(api_namespace, "scale-rollout", "scale"), {"spec": {"replicas": 2}})
    assert (await kube.get(lws_path(api_namespace, "scale-rollout")))["spec"]["replicas"] == 2
    with pytest.raises(ApiError) as caught:
        await kube.patch(lws_path(api_namespace, "scale-rollout"), {"spec": {"replicas": 3}})
    assert "must not be 0 when maxSurge is 0" in caught.value.message
