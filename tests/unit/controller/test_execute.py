"""The executor (controller/runtime/execute.py) turns each kind of write into its request, posts
the write's event once it succeeded, and its refusal event when the server refuses. The
requests reach a recording client here; the cluster tests send them to a real API server."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

import pytest

from lws_operator.controller.runtime.execute import Executor, write_path
from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.events import EventRecorder
from lws_operator.plan.events import Event, normal, warning
from lws_operator.plan.writes import Write

OWNER = {"metadata": {"name": "demo", "namespace": "ns", "uid": "u"}}
DONE = normal("Done", "Test", "done")


class _Kube:
    def __init__(self, refuse: ApiError | None = None, answer: Any = None) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.refuse, self.answer = refuse, answer

    async def _call(self, *call: Any) -> Any:
        self.calls.append(call)
        if self.refuse is not None:
            raise self.refuse
        return {"metadata": {"resourceVersion": "7"}} if self.answer is None else self.answer

    async def create(self, path: str, body: Any) -> Any:
        return await self._call("create", path, body)

    async def apply(self, path: str, body: Any) -> Any:
        return await self._call("apply", path, body)

    async def patch(self, path: str, body: Any, *, kind: str) -> Any:
        return await self._call("patch", path, body, kind)

    async def delete(self, path: str, **kw: Any) -> Any:
        return await self._call("delete", path, kw)


class _Events:
    def __init__(self) -> None:
        self.posted: list[Event] = []

    async def post(self, regarding: Any, event: Event) -> None:
        self.posted.append(event)


def _executor(kube: _Kube) -> tuple[Executor, _Events]:
    events = _Events()
    return Executor(cast(Kube, kube), cast(EventRecorder, events)), events


@pytest.mark.parametrize(
    ("write", "call"),
    [
        (
            Write("create", "StatefulSet", "demo-0", body={"a": 1}),
            ("create", "/apis/apps/v1/namespaces/ns/statefulsets", {"a": 1}),
        ),
        (
            Write("apply", "StatefulSet", "demo", body={"b": 2}),
            ("apply", "/apis/apps/v1/namespaces/ns/statefulsets/demo", {"b": 2}),
        ),
        (
            Write("patch", "Service", "demo", body={"c": 3}),
            ("patch", "/api/v1/namespaces/ns/services/demo", {"c": 3}, "merge"),
        ),
        (
            Write("status", "LeaderWorkerSet", "demo", body={"d": 4}),
            (
                "patch",
                "/apis/leaderworkerset.x-k8s.io/v1/namespaces/ns/leaderworkersets/demo/status",
                {"d": 4},
                "merge",
            ),
        ),
        (
            Write("delete", "Pod", "demo-0", uid="p", propagation="Foreground", grace_seconds=0),
            (
                "delete",
                "/api/v1/namespaces/ns/pods/demo-0",
                {
                    "propagation": "Foreground",
                    "preconditions": {"uid": "p"},
                    "grace_period_seconds": 0,
                },
            ),
        ),
        (
            Write("create", "PodGroup", "pg", body={}, api_version="scheduling.k8s.io/v1beta1"),
            ("create", "/apis/scheduling.k8s.io/v1beta1/namespaces/ns/podgroups", {}),
        ),
    ],
)
async def test_each_write_is_one_request_and_its_event_follows(
    write: Write, call: tuple[Any, ...]
) -> None:
    kube = _Kube()
    executor, events = _executor(kube)
    answer = await executor.send("ns", OWNER, replace(write, event=DONE))
    assert kube.calls == [call]
    assert answer == {"metadata": {"resourceVersion": "7"}}
    assert events.posted == [DONE]


async def test_a_name_taken_is_no_error_and_no_event() -> None:
    kube = _Kube(refuse=ApiError(409, "AlreadyExists", "exists", None))
    executor, events = _executor(kube)
    write = Write("create", "Service", "demo", body={}, event=DONE)
    assert await executor.send("ns", OWNER, write) is None
    assert events.posted == []


async def test_a_refusal_posts_the_refused_event_and_raises() -> None:
    kube = _Kube(refuse=ApiError(422, "Invalid", "spec.x: bad", None))
    executor, events = _executor(kube)

    def refused(message: str) -> Event:
        return warning("FailedCreate", "Create", message)

    write = Write("create", "Service", "demo", body={}, event=DONE, refused=refused)
    with pytest.raises(ApiError):
        await executor.send("ns", OWNER, write)
    assert [e.note for e in events.posted] == ["spec.x: bad"]


def test_write_path_names_the_collection_for_a_create() -> None:
    write = Write("create", "ConfigMap", "h")
    assert write_path("ns", write, collection=True) == "/api/v1/namespaces/ns/configmaps"
    assert write_path("ns", write) == "/api/v1/namespaces/ns/configmaps/h"


async def test_a_create_that_must_make_its_object_is_refused_when_the_name_is_taken() -> None:
    kube = _Kube(refuse=ApiError(409, "AlreadyExists", "exists", None))
    executor, _ = _executor(kube)
    with pytest.raises(ApiError):
        await executor.send("ns", OWNER, Write("create", "ConfigMap", "h", exists_ok=False))
