"""What the reconciler remembers of an LWS (reported invalid generations, claims warnings,
the last status write, the validated model) is forgotten once the LWS is gone (issue 12.7)."""

from __future__ import annotations

from typing import Any, cast

from lws_operator.controller.cache import Cache
from lws_operator.controller.reconcile import Memory, Reconciler
from lws_operator.kube.client import Kube
from lws_operator.kube.events import EventRecorder
from lws_operator.plan.events import Event


class _Events:
    def __init__(self) -> None:
        self.forgotten: list[str] = []
        self.posted: list[Event] = []

    async def post(self, regarding: Any, event: Event) -> None:
        self.posted.append(event)

    def forget(self, uid: str) -> None:
        self.forgotten.append(uid)


def invalid(generation: int) -> dict[str, Any]:
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {
            "name": "bad",
            "namespace": "ns",
            "uid": "u",
            "generation": generation,
            "resourceVersion": str(generation),
        },
        "spec": {"replicas": "many"},
    }


async def test_memory_of_an_lws_is_kept_while_it_exists_and_dropped_with_it() -> None:
    cache, events = Cache(), _Events()
    store: dict[tuple[str, str], list[dict[str, Any]]] = {("ns", "bad"): [invalid(1)]}
    cache.bind({"lws_objects": store})
    r = Reconciler(cast(Kube, None), cache, cast(EventRecorder, events))
    r.memory[("ns", "other")] = Memory(reported={("claims", "k")})
    assert await r(("ns", "bad")) is None
    assert await r(("ns", "bad")) is None  # one Warning per generation
    assert [e.reason for e in events.posted] == ["InvalidSpec"]
    assert r.memory[("ns", "bad")].reported_invalid == {1}
    store.clear()  # deleted
    assert await r(("ns", "bad")) is None
    assert ("ns", "bad") not in r.memory and ("ns", "other") in r.memory
