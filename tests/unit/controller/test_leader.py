"""Lease leader election against an in-memory API server (resourceVersion preconditions as
the real one): one winner, renewals, expiry judged by the candidate's own clock, release."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from lws_operator.controller.runtime import leader as leader_mod
from lws_operator.controller.runtime.leader import LeaderElector, LeadershipLost
from lws_operator.kube.client import ApiError


class FakeLeases:
    """Just enough of the API server for one Lease."""

    def __init__(self) -> None:
        self.obj: dict[str, Any] | None = None
        self.rv = 0
        self.fail = False

    def _check(self) -> None:
        if self.fail:
            raise OSError("connection refused")

    async def get_or_none(self, path: str) -> dict[str, Any] | None:
        self._check()
        return copy.deepcopy(self.obj)

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self._check()
        if self.obj is not None:
            raise ApiError(409, "AlreadyExists", "exists", None)
        self.rv += 1
        self.obj = copy.deepcopy(body)
        self.obj["metadata"]["resourceVersion"] = str(self.rv)
        return copy.deepcopy(self.obj)

    async def replace(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self._check()
        assert self.obj is not None
        if body["metadata"].get("resourceVersion") != self.obj["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", "the object has been modified", None)
        self.rv += 1
        self.obj = copy.deepcopy(body)
        self.obj["metadata"]["resourceVersion"] = str(self.rv)
        return copy.deepcopy(self.obj)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(leader_mod.time, "monotonic", c)
    return c


def elector(api: FakeLeases, identity: str) -> LeaderElector:
    return LeaderElector(api, "ns", identity=identity)  # type: ignore[arg-type]


async def test_one_candidate_wins_and_renews(clock: Clock) -> None:
    api = FakeLeases()
    a, b = elector(api, "a"), elector(api, "b")
    assert await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()
    assert api.obj is not None
    spec = api.obj["spec"]
    assert spec["holderIdentity"] == "a" and spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0
    first = spec["renewTime"]
    clock.now += 2
    assert await a.try_acquire_or_renew()
    assert api.obj["spec"]["renewTime"] >= first and api.obj["spec"]["acquireTime"] == first


async def test_a_lease_expires_by_the_candidates_clock_only(clock: Clock) -> None:
    api = FakeLeases()
    a, b = elector(api, "a"), elector(api, "b")
    assert await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()  # b first sees a's record now
    clock.now += 14.9
    assert not await b.try_acquire_or_renew()
    clock.now += 0.2
    assert await b.try_acquire_or_renew()
    assert api.obj is not None
    assert api.obj["spec"]["holderIdentity"] == "b" and api.obj["spec"]["leaseTransitions"] == 1


async def test_a_renewing_holder_is_never_replaced(clock: Clock) -> None:
    api = FakeLeases()
    a, b = elector(api, "a"), elector(api, "b")
    assert await a.try_acquire_or_renew()
    for _ in range(20):
        clock.now += 2
        assert await a.try_acquire_or_renew()
        assert not await b.try_acquire_or_renew()


async def test_a_change_dates_from_the_previous_read(clock: Clock) -> None:
    """A renewal first seen at a read happened after the previous read: expiry counts from
    there, so a holder killed right after renewing is replaced within one lease duration."""
    api = FakeLeases()
    a, b = elector(api, "a"), elector(api, "b")
    assert await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()  # read at t0
    clock.now += 1.5
    assert await a.try_acquire_or_renew()  # last renewal at t0 + 1.5, then killed
    clock.now += 0.5
    assert not await b.try_acquire_or_renew()  # sees it at t0 + 2: dated t0
    clock.now += 13.1  # t0 + 15.1 < renewal + 15
    assert await b.try_acquire_or_renew()


async def test_hold_gives_up_after_the_renew_deadline(
    clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    api = FakeLeases()
    a = elector(api, "a")
    await a.acquire()
    assert a.is_leader

    async def sleep(seconds: float) -> None:
        clock.now += seconds

    monkeypatch.setattr(leader_mod.asyncio, "sleep", sleep)
    api.fail = True
    with pytest.raises(LeadershipLost, match="renew deadline"):
        await a.hold()
    assert not a.is_leader
    assert clock.now - 1000.0 >= 10.0


async def test_hold_stops_at_once_when_another_holder_took_over(
    clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    api = FakeLeases()
    a = elector(api, "a")
    await a.acquire()

    async def sleep(seconds: float) -> None:
        clock.now += seconds

    monkeypatch.setattr(leader_mod.asyncio, "sleep", sleep)
    assert api.obj is not None
    api.obj["spec"]["holderIdentity"] = "intruder"
    api.rv += 1
    api.obj["metadata"]["resourceVersion"] = str(api.rv)
    with pytest.raises(LeadershipLost, match="intruder"):
        await a.hold()


async def test_release_lets_a_successor_in_at_once(clock: Clock) -> None:
    api = FakeLeases()
    a, b = elector(api, "a"), elector(api, "b")
    await a.acquire()
    assert not await b.try_acquire_or_renew()
    await a.release()
    assert api.obj is not None and api.obj["spec"]["holderIdentity"] == ""
    assert await b.try_acquire_or_renew()


def test_timings_must_be_ordered() -> None:
    with pytest.raises(ValueError, match="retry period < renew deadline < lease duration"):
        LeaderElector(FakeLeases(), "ns", lease_duration=10, renew_deadline=10)  # type: ignore[arg-type]
