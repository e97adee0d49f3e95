"""Offline validation and the API server agree on accept or reject, for generated objects."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, event, given, settings

from lws_operator.api import validate
from lws_operator.kube.client import ApiError, Kube
from tests.cluster.conftest import lws_path
from tests.unit.api.lws_testdata import lws_objects


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(obj=lws_objects())
async def test_offline_validation_agrees_with_the_api_server(
    kube: Kube, api_namespace: str, obj: dict[str, Any]
) -> None:
    offline = validate(obj)
    try:
        await kube.create(lws_path(api_namespace), copy.deepcopy(obj), dry_run=True)
        server = None
    except ApiError as e:
        if e.status != 422:
            raise
        server = e.message
    event("accepted" if server is None else "rejected")
    assert (server is None) == (not offline), f"server: {server}\noffline: {offline}"
