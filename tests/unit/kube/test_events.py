"""Events are aggregated as client-go's recorder does: one Event object per repeated event,
with series.count (kube/events.py)."""

from __future__ import annotations

from typing import Any, cast

from lws_operator.kube.client import Kube
from lws_operator.kube.events import SERIES_FINISH, EventRecorder
from lws_operator.plan.events import warning

LWS = {
    "apiVersion": "v1",
    "kind": "LeaderWorkerSet",
    "metadata": {"name": "demo", "namespace": "ns", "uid": "u", "resourceVersion": "5"},
}


class _Kube:
    def __init__(self) -> None:
        self.created: list[dict[str, Any]] = []
        self.patched: list[tuple[str, dict[str, Any]]] = []

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.created.append(body)
        return body

    async def patch(self, path: str, body: dict[str, Any], kind: str = "merge") -> dict[str, Any]:
        self.patched.append((path.rsplit("/", 1)[-1], body))
        return body


def recorder() -> tuple[EventRecorder, _Kube, list[float]]:
    kube, now = _Kube(), [100.0]
    return EventRecorder(cast(Kube, kube), "me", clock=lambda: now[0]), kube, now


FOREIGN = warning("FailedCreate", "Create", "StatefulSet demo-1 exists and is not owned")


async def test_a_repeated_warning_is_one_event_with_a_count() -> None:
    rec, kube, _ = recorder()
    for _ in range(5):
        await rec.post(LWS, FOREIGN)
    assert len(kube.created) == 1
    name = kube.created[0]["metadata"]["name"]
    # The first repeat turns it into a series at once; later ones wait for the flush.
    assert [(n, p["series"]["count"]) for n, p in kube.patched] == [(name, 2)]
    await rec.flush()
    assert [p["series"]["count"] for _, p in kube.patched] == [2, 5]
    await rec.flush()
    assert len(kube.patched) == 2  # nothing new to write


async def test_other_notes_or_objects_are_other_events_other_versions_are_not() -> None:
    rec, kube, _ = recorder()
    await rec.post(LWS, FOREIGN)
    await rec.post(LWS, warning("FailedCreate", "Create", "node n1 does not exist"))
    other = {**LWS, "metadata": {**LWS["metadata"], "uid": "u2"}}
    await rec.post(other, FOREIGN)
    assert len(kube.created) == 3 and kube.patched == []
    newer = {**LWS, "metadata": {**LWS["metadata"], "resourceVersion": "6"}}
    await rec.post(newer, FOREIGN)  # the same LWS after a status write: the same series
    assert len(kube.created) == 3 and [p["series"]["count"] for _, p in kube.patched] == [2]


async def test_a_series_ends_after_a_quiet_while_and_with_its_object() -> None:
    rec, kube, now = recorder()
    await rec.post(LWS, FOREIGN)
    await rec.post(LWS, FOREIGN)
    await rec.post(LWS, FOREIGN)
    now[0] += SERIES_FINISH
    await rec.flush()  # writes the last count, then forgets the series
    assert [p["series"]["count"] for _, p in kube.patched] == [2, 3] and len(rec) == 0
    await rec.post(LWS, FOREIGN)
    assert len(kube.created) == 2  # a new Event once the series ended
    rec.forget("u")
    assert len(rec) == 0
