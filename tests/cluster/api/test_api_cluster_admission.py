"""The API server accepts and rejects what offline validation does, with the same messages:
every case of tests/unit/api/lws_cases.yaml, as a create and as an update."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from lws_operator.api import LeaderWorkerSet
from lws_operator.api.validation import as_admitted
from lws_operator.kube.client import ApiError, Kube
from tests.cluster.conftest import lws_path
from tests.unit.api.lws_testdata import Case, load_cases

INVALID, VALID = load_cases()


async def submit(kube: Kube, namespace: str, case: Case) -> dict[str, Any]:
    """Dry-run the create, or create the old object and dry-run the update (a merge patch)."""
    if case.old is None:
        return await kube.create(lws_path(namespace), copy.deepcopy(case.obj), dry_run=True)
    await kube.create(lws_path(namespace), copy.deepcopy(case.old))
    try:
        return await kube.request(
            "PATCH",
            lws_path(namespace, case.name),
            body=case.patch,
            query={"dryRun": "All"},
            content_type="application/merge-patch+json",
        )
    finally:
        await kube.delete(lws_path(namespace, case.name))


@pytest.mark.parametrize("case", INVALID, ids=str)
async def test_rejected(kube: Kube, api_namespace: str, case: Case) -> None:
    with pytest.raises(ApiError) as caught:
        await submit(kube, api_namespace, case)
    error = caught.value
    assert error.status == 422, error
    if case.server:
        assert case.server in error.message, error.message
    else:
        assert f"{case.path}: " in error.message, error.message
        assert str(case.message) in error.message, error.message


@pytest.mark.parametrize("case", VALID, ids=str)
async def test_accepted_with_the_models_defaults(
    kube: Kube, api_namespace: str, case: Case
) -> None:
    stored = await submit(kube, api_namespace, case)
    # What the server stored (nulls pruned, Go's zero values and the CRD defaults applied) is
    # what offline validation takes the object for, with the pydantic models' defaults.
    expected = LeaderWorkerSet.model_validate(as_admitted(case.obj)).to_dict()["spec"]
    assert stored["spec"] == expected
