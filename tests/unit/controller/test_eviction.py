"""controller/lws/eviction.py: the configuration keeper keeps what it does not change and repairs a
reset; the reviewer records a move with the resourceVersion it read and reads again after a
conflict; only pods/eviction CREATE requests are judged."""

from __future__ import annotations

import copy
from typing import Any

from lws_operator.api import constants as c
from lws_operator.controller.lws import eviction
from lws_operator.kube.client import ApiError
from lws_operator.plan.lws import disruption as d
from lws_operator.plan.lws.groups import Group
from lws_operator.plan.lws.observed import Observed
from tests.unit.api.lws_testdata import base_object

CONFIGS = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
PATH = f"{CONFIGS}/{eviction.CONFIGURATION_NAME}"


class FakeKube:
    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.writes: list[tuple[str, str, Any]] = []
        self.conflicts = 0
        self.reads = 0

    async def get_or_none(self, path: str) -> dict[str, Any] | None:
        self.reads += 1
        obj = self.objects.get(path)
        return copy.deepcopy(obj) if obj is not None else None

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.writes.append(("create", path, body))
        body = copy.deepcopy(body)
        body["metadata"]["resourceVersion"] = "1"
        self.objects[f"{path}/{body['metadata']['name']}"] = body
        return body

    async def replace(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.writes.append(("replace", path, body))
        body = copy.deepcopy(body)
        body["metadata"]["resourceVersion"] = str(int(body["metadata"]["resourceVersion"]) + 1)
        self.objects[path] = body
        return body

    async def patch(self, path: str, body: dict[str, Any], kind: str = "merge") -> dict[str, Any]:
        self.writes.append(("patch", path, body))
        if self.conflicts:
            self.conflicts -= 1
            raise ApiError(409, "Conflict", "the object has been modified", None)
        return {}


async def test_coverage_adds_keeps_the_client_and_repairs_a_reset() -> None:
    kube = FakeKube()
    keeper = eviction.EvictionCoverage(kube, manage_client=True)  # type: ignore[arg-type]
    await keeper.publish({"url": "https://127.0.0.1:1/validate--v1-pod-eviction"}, b"CA")
    await keeper.cover(("ns", "a"))
    await keeper.cover(("ns", "b"))
    config = kube.objects[PATH]
    assert eviction.covered_of(config) == {("ns", "a"), ("ns", "b")}
    (hook,) = config["webhooks"]
    assert hook["clientConfig"]["url"].endswith("/validate--v1-pod-eviction")
    assert hook["matchConditions"][0]["expression"] == d.eviction_match_expression(
        [("ns", "a"), ("ns", "b")]
    )
    writes = len(kube.writes)
    await keeper.cover(("ns", "a"))  # covered, not due: nothing read or written
    assert len(kube.writes) == writes
    # A re-applied manifest resets it; the next due check writes everything back.
    config["metadata"]["annotations"][eviction.COVERED_ANNOTATION] = "[]"
    hook["matchConditions"] = [{"name": "lws-pods", "expression": "false"}]
    keeper._verified = 0.0
    await keeper.cover(("ns", "a"))
    assert eviction.covered_of(kube.objects[PATH]) == {("ns", "a"), ("ns", "b")}
    keeper.forget(("ns", "b"))
    keeper.forget(("ns", "b"))  # its pods' events, while the removal is queued: one write
    for task in list(keeper._tasks):
        await task
    assert eviction.covered_of(kube.objects[PATH]) == {("ns", "a")}
    reads = kube.reads
    keeper.forget(("ns", "b"))  # no longer covered: nothing read or written
    keeper.forget(("ns", "c"))  # never covered
    assert not keeper._tasks and kube.reads == reads


async def test_coverage_with_certificates_from_elsewhere_edits_only_the_conditions() -> None:
    kube = FakeKube()
    webhook = eviction.eviction_webhook({"service": {"name": "s", "namespace": "n"}}, b"INJECTED")
    installed = eviction.configuration(webhook, set())
    installed["metadata"]["resourceVersion"] = "7"
    installed["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] = "x/y"
    kube.objects[PATH] = installed
    keeper = eviction.EvictionCoverage(kube, manage_client=False)  # type: ignore[arg-type]
    await keeper.cover(("ns", "a"))
    config = kube.objects[PATH]
    assert config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == "x/y"
    assert config["webhooks"][0]["clientConfig"] == webhook["clientConfig"]
    assert eviction.covered_of(config) == {("ns", "a")}


class FakeCache:
    def __init__(self, observed: Observed) -> None:
        self.observed = observed

    def synced(self) -> bool:
        return True

    def observe(self, key: Any) -> Observed:
        return self.observed

    def nodes(self) -> dict[str, Any]:
        return {"n1": {"spec": {"unschedulable": True}}}


def _pod(index: int) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"lws-{index}",
            "uid": f"u{index}",
            "labels": {c.SET_NAME_LABEL: "lws", c.GROUP_INDEX_LABEL: str(index)},
        },
        "spec": {"nodeName": "n1"},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }


def _review(name: str, *, sub: str = "eviction", dry_run: bool = False) -> dict[str, Any]:
    return {
        "request": {
            "uid": "r1",
            "operation": "CREATE",
            "resource": {"resource": "pods"},
            "subResource": sub,
            "namespace": "ns",
            "name": name,
            "dryRun": dry_run,
        }
    }


async def test_reviewer_records_a_move_and_reads_again_after_a_conflict() -> None:
    lws = base_object("lws")
    lws["metadata"].update(namespace="ns", uid="l1")
    sts = {"metadata": {"name": "lws", "resourceVersion": "5"}, "spec": {"replicas": 2}}
    lws["spec"]["leaderWorkerTemplate"]["size"] = 1
    observed = Observed(
        lws=lws, statefulsets={"lws": sts}, groups=[Group(i, _pod(i)) for i in (0, 1)]
    )
    kube = FakeKube()
    kube.objects["/api/v1/namespaces/ns/pods/lws-1"] = _pod(1)
    kube.objects["/apis/apps/v1/namespaces/ns/statefulsets/lws"] = {
        **sts,
        "metadata": {"name": "lws", "resourceVersion": "6"},
    }
    kube.conflicts = 1
    reviewer = eviction.EvictionReviewer(kube, FakeCache(observed))  # type: ignore[arg-type]
    answer = (await reviewer.review(_review("lws-1")))["response"]
    assert answer["allowed"] is False and answer["status"]["code"] == 429
    patches = [body for kind, _, body in kube.writes if kind == "patch"]
    assert [p["metadata"]["resourceVersion"] for p in patches] == ["5", "6"]
    state = d.read_state({"metadata": {"annotations": patches[-1]["metadata"]["annotations"]}})
    assert [m.group for m in state.moves] == [1]
    # A dry run is answered the same and records nothing; other subresources are not judged.
    kube.writes.clear()
    dry = (await reviewer.review(_review("lws-1", dry_run=True)))["response"]
    assert dry["allowed"] is False and kube.writes == []
    assert (await reviewer.review(_review("lws-1", sub="status")))["response"]["allowed"]
    # A pod of no LWS, or gone: allowed.
    assert (await reviewer.review(_review("nope")))["response"]["allowed"]
