"""The gang provider's PodGroup API, chosen at start-up from the cluster's discovery
(``operator.gang_wiring``): the version written and watched, what the pod webhook is told, and
the one error (and the Warning for each LWS) when the native API is not served."""

from __future__ import annotations

import logging
from typing import Any, cast

import pytest

from lws_operator.controller import operator
from lws_operator.kube.client import ApiError, Kube
from lws_operator.plan.lws import gang

PG = [{"name": "podgroups"}, {"name": "podgroups/status"}, {"name": "workloads"}]


class _Discovery:
    """A cluster's /version and scheduling.k8s.io discovery: ``versions`` maps each served
    version to its resources."""

    def __init__(self, git_version: str, versions: dict[str, list[dict[str, str]]]) -> None:
        self.git_version = git_version
        self.versions = versions
        self.paths: list[str] = []

    async def get(self, path: str) -> dict[str, Any]:
        self.paths.append(path)
        if path == "/version":
            return {"major": "1", "gitVersion": self.git_version}
        found = await self.get_or_none(path)
        if found is None:
            raise ApiError(
                404, "NotFound", "the server could not find the requested resource", None
            )
        return found

    async def get_or_none(self, path: str) -> dict[str, Any] | None:
        self.paths.append(path)
        if path == "/apis/scheduling.k8s.io":
            if not self.versions:
                return None
            return {"versions": [{"version": v} for v in self.versions]}
        prefix = "/apis/scheduling.k8s.io/"
        if path.startswith(prefix) and path[len(prefix) :] in self.versions:
            return {"resources": self.versions[path[len(prefix) :]]}
        return None


CLUSTERS = [
    ("v1.36.5", {"v1": [{"name": "priorityclasses"}], "v1alpha2": PG}, "v1alpha2"),
    ("v1.37.2", {"v1": [{"name": "priorityclasses"}], "v1beta1": PG}, "v1beta1"),
]


@pytest.mark.parametrize(("version", "served", "want"), CLUSTERS)
async def test_the_native_provider_writes_the_served_version(
    version: str, served: dict[str, list[dict[str, str]]], want: str
) -> None:
    wiring = await operator.gang_wiring(cast(Kube, _Discovery(version, served)), "kubernetes")
    assert wiring.api == gang.GangApi("kubernetes", f"scheduling.k8s.io/{want}")
    assert wiring.unavailable is None and wiring.webhook_provider == "kubernetes"
    (*_, podgroups) = operator._children(wiring.api)
    assert podgroups[:4] == ("lws_podgroups", "scheduling.k8s.io", want, "podgroups")


@pytest.mark.parametrize(
    "served",
    [
        {},  # 1.31: the group is not served
        {"v1": [{"name": "priorityclasses"}]},  # 1.33
        {"v1": [{"name": "priorityclasses"}], "v1alpha2": []},  # 1.36 without the gates
    ],
)
async def test_the_native_api_unserved_is_one_error_and_no_gangs(
    served: dict[str, list[dict[str, str]]], caplog: pytest.LogCaptureFixture
) -> None:
    kube = _Discovery("v1.33.13", served)
    with caplog.at_level(logging.INFO, logger=operator.log.name):
        wiring = await operator.gang_wiring(cast(Kube, kube), "kubernetes")
    assert wiring.api is None and wiring.webhook_provider is None  # pods are not joined
    assert operator._children(wiring.api) == operator._CHILDREN  # no PodGroups watched
    (record,) = caplog.records
    assert record.levelno == logging.ERROR
    assert record.getMessage() == gang.unavailable("v1.33.13", {})
    assert "this cluster (v1.33.13) serves none: LeaderWorkerSets are run without gangs" in (
        record.getMessage()
    )
    assert wiring.unavailable == gang.unavailable_event(record.getMessage())


async def test_volcano_and_no_provider_ask_nothing() -> None:
    kube = _Discovery("v1.33.13", {})
    assert await operator.gang_wiring(cast(Kube, kube), None) == operator.GangWiring()
    volcano = await operator.gang_wiring(cast(Kube, kube), "volcano")
    assert volcano.api == gang.VOLCANO and volcano.webhook_provider == "volcano"
    assert volcano.unavailable is None
    assert kube.paths == []


class _Stop(Exception):
    pass


class _Refusing:
    """A cluster whose every write stops the pass (after what comes before any write)."""

    def __getattr__(self, name: str) -> Any:
        async def refuse(*args: Any, **kw: Any) -> Any:
            raise _Stop(name)

        return refuse


async def test_each_lws_gets_the_warning_once() -> None:
    from lws_operator.api.models import LeaderWorkerSet
    from lws_operator.controller.lws import reconcile
    from lws_operator.controller.lws.cache import Cache
    from lws_operator.plan.events import Event
    from tests.unit.api.lws_testdata import base_object

    posted: list[tuple[str, Event]] = []

    class _Events:
        async def post(self, obj: Any, event: Event) -> None:
            posted.append((obj["metadata"]["name"], event))

    warning = gang.unavailable_event(gang.unavailable("v1.33.13", {}))
    store: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for name in ("a", "b"):
        body = base_object(name)
        body["metadata"].update(namespace="ns", uid=f"u-{name}", generation=1)
        LeaderWorkerSet.model_validate(body)
        store[("ns", name)] = [body]
    cache = Cache()
    cache.bind({"lws_objects": store})
    r = reconcile.Reconciler(
        kube=cast(Kube, _Refusing()),
        cache=cache,
        events=cast(Any, _Events()),
        gang_unavailable=warning,
    )
    for name in ("a", "b", "a", "b"):
        with pytest.raises(_Stop):  # the pass stops at its first write
            await r(("ns", name))
    assert posted == [("a", warning), ("b", warning)]


class _Flaky(_Discovery):
    """Discovery answering ``errors`` first, one per request to the group."""

    def __init__(self, errors: list[Exception], versions: dict[str, list[dict[str, str]]]) -> None:
        super().__init__("v1.37.2", versions)
        self.errors = errors

    async def get_or_none(self, path: str) -> dict[str, Any] | None:
        if path == "/apis/scheduling.k8s.io" and self.errors:
            raise self.errors.pop(0)
        return await super().get_or_none(path)


async def test_passing_discovery_errors_are_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(operator, "DISCOVERY_RETRY", 0.0)
    errors: list[Exception] = [
        ApiError(503, "ServiceUnavailable", "busy", None),
        ConnectionError("x"),
    ]
    kube = _Flaky(errors, {"v1beta1": PG})
    wiring = await operator.gang_wiring(cast(Kube, kube), "kubernetes")
    assert wiring.api == gang.GangApi("kubernetes", "scheduling.k8s.io/v1beta1")
    always = [ApiError(503, "ServiceUnavailable", "busy", None)] * operator.DISCOVERY_ATTEMPTS
    with pytest.raises(ApiError):  # the start fails rather than run without gangs on a guess
        await operator.gang_wiring(cast(Kube, _Flaky(list(always), {"v1beta1": PG})), "kubernetes")


async def test_refused_discovery_is_said(caplog: pytest.LogCaptureFixture) -> None:
    kube = _Flaky([ApiError(403, "Forbidden", "no discovery for you", None)], {"v1beta1": PG})
    with caplog.at_level(logging.ERROR, logger=operator.log.name):
        wiring = await operator.gang_wiring(cast(Kube, kube), "kubernetes")
    assert wiring.api is None
    (record,) = caplog.records
    assert record.getMessage().endswith(
        "(discovery of scheduling.k8s.io was refused: no discovery for you)"
    ), record.getMessage()
