"""Regressions (found by the operator-kill tests and the spec fuzzer): a reconcile whose
namespace was deleted meanwhile got ``404 namespaces "x" not found`` on its first write, and one
whose LWS was deleted meanwhile got ``404 leaderworkersets... "x" not found`` on its status
patch; both were logged as failed reconciles with a traceback and retried. Both are now a quiet
end, like a namespace terminating."""

from __future__ import annotations

from typing import Any

import pytest

from lws_operator.controller.lws import reconcile
from lws_operator.controller.lws.cache import Cache
from lws_operator.kube.client import ApiError
from lws_operator.plan.lws.observed import Observed
from tests.unit.api.lws_testdata import base_object


def _reconciler(monkeypatch: pytest.MonkeyPatch, error: ApiError) -> reconcile.Reconciler:
    body = base_object("lws")
    body["metadata"].update(namespace="gone", uid="u1", generation=1)
    cache = Cache()
    monkeypatch.setattr(cache, "observe", lambda key: Observed(lws=body))

    async def run(self: Any, steps: Any) -> float | None:
        raise error

    monkeypatch.setattr(reconcile.Steps, "take", run)
    return reconcile.Reconciler(kube=None, cache=cache, events=None)  # type: ignore[arg-type]


async def test_a_namespace_deleted_meanwhile_ends_the_reconcile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gone = ApiError(404, "NotFound", 'namespaces "gone" not found', None)
    assert await _reconciler(monkeypatch, gone)(("gone", "lws")) is None


async def test_the_lws_deleted_meanwhile_ends_the_reconcile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gone = ApiError(
        404, "NotFound", 'leaderworkersets.leaderworkerset.x-k8s.io "lws" not found', None
    )
    assert await _reconciler(monkeypatch, gone)(("gone", "lws")) is None


async def test_other_not_found_errors_still_fail_the_reconcile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for message in ('namespaces "elsewhere" not found', 'statefulsets.apps "lws" not found'):
        with pytest.raises(ApiError):
            await _reconciler(monkeypatch, ApiError(404, "NotFound", message, None))(
                ("gone", "lws")
            )
