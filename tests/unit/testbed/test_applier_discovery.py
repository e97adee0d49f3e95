"""Regression (a `make run` failure in CI): the example LWS was applied right after its CRD was
Established, and discovery of the new group still answered 404. The Applier now asks again,
bounded."""

from __future__ import annotations

from typing import Any, cast

import pytest

from lws_operator.kube.client import ApiError, Kube
from lws_testbed.manifests import Applier

LWS = {"kind": "LeaderWorkerSet", "name": "leaderworkersets", "namespaced": True}


class _LaggingDiscovery:
    """404 for the group, then the group without the kind, then the kind."""

    def __init__(self) -> None:
        self.answers: list[Any] = [
            ApiError(404, "Not Found", "404 page not found", None),
            {"resources": []},
            {"resources": [LWS, {**LWS, "name": "leaderworkersets/status"}]},
        ]

    async def get(self, path: str) -> dict[str, Any]:
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, ApiError):
            raise answer
        return cast(dict[str, Any], answer)


async def test_discovery_of_a_new_crd_is_asked_again_until_it_catches_up() -> None:
    applier = Applier(cast(Kube, _LaggingDiscovery()))
    assert await applier.resource_of("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet") == (
        "leaderworkersets",
        True,
    )


async def test_a_kind_that_never_appears_is_an_error_naming_it() -> None:
    applier = Applier(cast(Kube, _LaggingDiscovery()))
    with pytest.raises(ValueError, match=r"no kind Nope in leaderworkerset\.x-k8s\.io/v1"):
        await applier.resource_of("leaderworkerset.x-k8s.io/v1", "Nope", timeout=0.5)
