"""The test bed's list-and-watch (testbed/lws_testbed/wait.py) waits out a 429 as the server
says: a CRD just served answers "storage is (re)initializing" until its watch cache is filled
(kopf logged that as an ERROR when `make run` started the operator that early)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest

from lws_operator.kube.client import ApiError, Kube
from lws_testbed.wait import follow_objects, retry_after


def initializing(seconds: int | None = 1) -> ApiError:
    details = {"retryAfterSeconds": seconds} if seconds is not None else {}
    body = {"kind": "Status", "reason": "TooManyRequests", "details": details, "code": 429}
    return ApiError(429, "TooManyRequests", "storage is (re)initializing", body)


def obj(name: str, rv: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv}}


class _WarmingUp:
    """A 429 for the first list and for the first watch, then a list and a watch event."""

    def __init__(self) -> None:
        self.lists = [
            initializing(),
            {"items": [obj("a", "1")], "metadata": {"resourceVersion": "1"}},
        ]
        self.watches: list[Any] = [initializing(), [("ADDED", obj("b", "2"))]]
        self.calls: list[str] = []

    async def list(self, path: str, **_: Any) -> dict[str, Any]:
        self.calls.append("list")
        answer = self.lists.pop(0) if len(self.lists) > 1 else self.lists[0]
        if isinstance(answer, ApiError):
            raise answer
        return cast(dict[str, Any], answer)

    async def watch(self, path: str, **_: Any) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        self.calls.append("watch")
        answer = self.watches.pop(0)
        if isinstance(answer, ApiError):
            raise answer
        for event in answer:
            yield event


async def test_a_429_is_waited_out_then_listed_and_watched() -> None:
    kube = _WarmingUp()
    seen = []
    started = time.monotonic()
    async with contextlib.aclosing(follow_objects(cast(Kube, kube), "/x")) as updates:
        async for objs in updates:
            seen.append(sorted(objs))
            if len(seen) == 3:
                break
    assert kube.calls == ["list", "list", "watch", "list", "watch"]
    assert seen == [["ns/a"], ["ns/a"], ["ns/a", "ns/b"]]
    assert time.monotonic() - started >= 2  # the Retry-After of each 429: 1 s


def test_retry_after_is_the_servers_or_one_second() -> None:
    assert retry_after(initializing(3)) == 3
    assert retry_after(initializing(None)) == 1
    assert retry_after(ApiError(500, "InternalError", "boom", None)) is None


@pytest.mark.parametrize("status", [403, 404, 500])
async def test_other_errors_are_raised(status: int) -> None:
    class _Failing(_WarmingUp):
        async def list(self, path: str, **_: Any) -> dict[str, Any]:
            raise ApiError(status, "X", "no", None)

    with pytest.raises(ApiError):
        async for _ in follow_objects(cast(Kube, _Failing()), "/x"):
            pass
