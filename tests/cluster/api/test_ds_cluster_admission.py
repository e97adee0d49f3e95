"""The API server accepts and rejects DisaggregatedSets as ``lws-operator validate`` does
(every case of tests/unit/api/ds_cases.py, as a create or an update), with upstream's
admission warning, the defaults of upstream's CRD, and a role scaler's scale subresource
readable before anything wrote it."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from lws_operator.api import ds_constants as c
from lws_operator.api.ds_admission_policy import POLICY_NAME
from lws_operator.api.ds_models import DisaggregatedSet
from lws_operator.kube.client import ApiError, Kube
from lws_testbed.lws_api import until
from lws_testbed.simulate import retry_conflicts
from tests.cluster.disaggregated.helpers import ds_path, scaler_path
from tests.unit.api.ds_cases import INVALID, VALID, Case, ds, role


@pytest.fixture(scope="module")
async def ds_namespace(kube: Kube, api_namespace: str) -> str:
    """The namespace, once the DisaggregatedSet policies are in effect (nothing can be
    watched for that: a bounded retry of a dry run only the policy rejects)."""
    both_zero = {"rollingUpdateConfiguration": {"maxSurge": 0, "maxUnavailable": 0}}
    probe = ds("probe", role("a", 2, rolloutStrategy=both_zero), role("b"))

    async def rejects() -> bool:
        try:
            await kube.create(ds_path(api_namespace), probe, dry_run=True)
        except ApiError as e:
            return POLICY_NAME in e.message
        return False

    await until(rejects, timeout=60, what="the DisaggregatedSet admission policy to take effect")
    return api_namespace


async def submit(kube: Kube, ns: str, case: Case) -> tuple[dict[str, Any], list[str]]:
    """Dry-run the create (or create the old object and dry-run the update); the stored
    object and the admission warnings."""
    name = case.obj["metadata"]["name"]
    if case.old is not None:
        await kube.create(ds_path(ns), copy.deepcopy(case.old))
    method, path = ("POST", ds_path(ns)) if case.old is None else ("PUT", ds_path(ns, name))

    async def write() -> tuple[dict[str, Any], list[str]]:
        body = copy.deepcopy(case.obj)
        if case.old is not None:
            current = await kube.get(ds_path(ns, name))
            body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        resp = await kube._send(method, path, body=body, query={"dryRun": "All"})
        try:
            stored = json.loads(await resp.read())
            # Warning headers: 299 - "<text>", the text's quotes escaped.
            found = [w.replace('\\"', '"') for w in resp.headers.getall("Warning", [])]
        finally:
            resp.release()
        return stored, found

    try:
        # The operator's DisaggregatedSet controller may write the old object (its status)
        # between the read and the update: read again on a conflict, as any client does.
        return await retry_conflicts(write)
    finally:
        if case.old is not None:
            await kube.delete(ds_path(ns, name))


@pytest.mark.parametrize("case", INVALID, ids=str)
async def test_rejected(kube: Kube, ds_namespace: str, case: Case) -> None:
    with pytest.raises(ApiError) as caught:
        await submit(kube, ds_namespace, case)
    error = caught.value
    assert error.status == 422, error
    assert f"{case.path}: " in error.message, error.message
    assert case.message in error.message, error.message


def _without_templates(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec without the pod templates (their Kubernetes defaults are the API server's)."""
    out = copy.deepcopy(spec)
    for r in out["roles"]:
        for key in ("leaderTemplate", "workerTemplate"):
            r["spec"]["leaderWorkerTemplate"].pop(key, None)
    return out


@pytest.mark.parametrize("case", VALID, ids=str)
async def test_accepted_with_upstreams_defaults(kube: Kube, ds_namespace: str, case: Case) -> None:
    stored, found = await submit(kube, ds_namespace, case)
    model = DisaggregatedSet.model_validate(case.obj).to_dict()["spec"]
    assert _without_templates(stored["spec"]) == _without_templates(model)
    if case.warning is None:
        assert found == []
    else:
        assert any(case.warning in w for w in found), found


async def test_a_scalers_scale_subresource(kube: Kube, ds_namespace: str) -> None:
    """GET /scale works before anything wrote the scaler's status (e2e hpa_test :53), and
    writing it sets spec.replicas (what an HPA does)."""
    body = {
        "apiVersion": c.API_VERSION,
        "kind": c.SCALER_KIND,
        "metadata": {"name": "alone"},
    }
    await kube.create(scaler_path(ds_namespace), body)
    scale = await kube.get(scaler_path(ds_namespace, "alone", "scale"))
    assert scale["kind"] == "Scale" and scale["spec"].get("replicas", 0) == 0  # omitted when 0
    assert scale["status"]["replicas"] == 0
    scale["spec"]["replicas"] = 3
    await kube.replace(scaler_path(ds_namespace, "alone", "scale"), scale)
    assert (await kube.get(scaler_path(ds_namespace, "alone")))["spec"]["replicas"] == 3
    with pytest.raises(ApiError) as caught:
        await kube.patch(scaler_path(ds_namespace, "alone"), {"spec": {"replicas": -1}})
    assert "spec.replicas" in caught.value.message
