"""Scrape authorization's pure parts: the bearer token as the API server reads it, the review
bodies and answers, and the decision caches (their lifetimes and bound). The reviews
themselves run against the real API server in tests/cluster/deploy/test_metrics.py."""

from __future__ import annotations

import string
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lws_operator.controller.servers import metrics_auth as ma


@pytest.mark.parametrize(
    ("header", "token"),
    [
        ("Bearer abc", "abc"),
        ("bearer abc", "abc"),
        ("  BEARER abc  ", "abc"),
        ("Bearer abc def", "abc"),  # what follows a second space is not the token
        ("Bearer  abc", None),  # empty token before the second space
        ("Bearer", None),
        ("Basic dXNlcjpwYXNz", None),
        ("", None),
        (None, None),
    ],
)
def test_bearer_token(header: str | None, token: str | None) -> None:
    assert ma.bearer_token(header) == token


@given(st.text(alphabet=string.ascii_letters + string.digits + "-._~+/=", min_size=1))
def test_any_token_is_read_back(token: str) -> None:  # the characters of a JWT or opaque token
    assert ma.bearer_token(f"Bearer {token}") == token


def test_the_reviewed_user_and_the_access_review_carry_every_attribute() -> None:
    answer = {
        "status": {
            "authenticated": True,
            "user": {
                "username": "system:serviceaccount:ns:reader",
                "uid": "u-1",
                "groups": ["system:serviceaccounts", "system:authenticated"],
                "extra": {"authentication.kubernetes.io/pod-name": ["p"]},
            },
        }
    }
    user = ma.reviewed_user(answer)
    assert user is not None
    assert ma.access_review(user, "/metrics", "get")["spec"] == {
        "user": "system:serviceaccount:ns:reader",
        "uid": "u-1",
        "groups": ["system:serviceaccounts", "system:authenticated"],
        "extra": {"authentication.kubernetes.io/pod-name": ["p"]},
        "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
    }
    assert ma.reviewed_user({"status": {"authenticated": False, "error": "expired"}}) is None
    assert ma.reviewed_user({"status": {"authenticated": True, "user": {}}}) is None
    assert ma.reviewed_user({}) is None
    assert ma.access_allowed({"status": {"allowed": True}})
    assert not ma.access_allowed({"status": {"allowed": True, "denied": True}})
    assert not ma.access_allowed({"status": {"allowed": False, "reason": "no RBAC"}})


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_cache_entries_expire_and_the_least_recently_used_goes_first() -> None:
    clock = Clock()
    cache: ma.TtlCache[str, int] = ma.TtlCache(2, clock)
    cache.put("a", 1, ttl=10)
    cache.put("b", 2, ttl=10)
    assert cache.get("a") == 1  # a is now the most recently used
    cache.put("c", 3, ttl=10)
    assert cache.get("b") is None and cache.get("a") == 1 and cache.get("c") == 3
    assert len(cache) == 2
    clock.now += 10
    assert cache.get("a") is None and len(cache) == 1


class FakeApi:
    """Answers reviews as an API server with one known token and one allowed user would."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.fail = False

    async def review(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(path)
        if self.fail:
            raise ConnectionError("API server unreachable")
        spec = body["spec"]
        if path == ma.TOKEN_REVIEWS:
            known = {"good": "alice", "other": "bob"}.get(spec["token"])
            if known is None:
                return {"status": {"authenticated": False, "error": "invalid token"}}
            return {"status": {"authenticated": True, "user": {"username": known}}}
        ok = spec["user"] == "alice" and spec["nonResourceAttributes"]["verb"] == "get"
        return {"status": {"allowed": ok}}


async def test_decisions_and_their_cache_lifetimes() -> None:
    api, clock = FakeApi(), Clock()
    auth = ma.ScrapeAuthorizer(api.review, clock)
    assert await auth.decide(None, "GET", "/metrics") == ma.Decision(401, "Unauthorized")
    assert await auth.decide("Basic x", "GET", "/metrics") == ma.Decision(401, "Unauthorized")
    assert api.calls == []  # no token, no review

    assert await auth.decide("Bearer good", "GET", "/metrics") == ma.Decision(200)
    assert api.calls == [ma.TOKEN_REVIEWS, ma.ACCESS_REVIEWS]
    for _ in range(10):  # a scrape every few seconds: no API call for a minute
        clock.now += 5
        assert (await auth.decide("Bearer good", "GET", "/metrics")).status == 200
    assert len(api.calls) == 2
    clock.now += ma.TOKEN_TTL  # the token is reviewed again; the allowed access still cached
    assert (await auth.decide("Bearer good", "GET", "/metrics")).status == 200
    assert api.calls[2:] == [ma.TOKEN_REVIEWS]

    denied = await auth.decide("Bearer other", "GET", "/metrics")
    assert denied == ma.Decision(403, "Authorization denied for user bob")
    assert (await auth.decide("Bearer good", "HEAD", "/metrics")).status == 403  # verb head
    calls = len(api.calls)
    clock.now += ma.DENY_TTL - 1
    assert (await auth.decide("Bearer other", "GET", "/metrics")).status == 403
    assert len(api.calls) == calls  # denial cached
    clock.now += 1
    assert (await auth.decide("Bearer other", "GET", "/metrics")).status == 403
    assert api.calls[-1] == ma.ACCESS_REVIEWS  # asked again after 30 s

    assert await auth.decide("Bearer bad", "GET", "/metrics") == ma.Decision(401, "Unauthorized")
    calls = len(api.calls)
    assert (await auth.decide("Bearer bad", "GET", "/metrics")).status == 401
    assert len(api.calls) == calls  # a refused token is cached too


async def test_a_failed_review_is_a_500_and_is_not_cached() -> None:
    api = FakeApi()
    auth = ma.ScrapeAuthorizer(api.review, Clock())
    api.fail = True
    assert await auth.decide("Bearer good", "GET", "/metrics") == ma.Decision(
        500, "Authentication failed"
    )
    api.fail = False
    assert (await auth.decide("Bearer good", "GET", "/metrics")).status == 200
    api.fail = True
    assert (await auth.decide("Bearer good", "GET", "/metrics")).status == 200  # cached now
    # A new path needs a new access review, which fails.
    assert await auth.decide("Bearer good", "GET", "/other") == ma.Decision(
        500, "Authorization for user alice failed"
    )


async def test_the_caches_stay_bounded() -> None:
    api = FakeApi()
    auth = ma.ScrapeAuthorizer(api.review, Clock())
    for i in range(ma.CACHE_ENTRIES + 50):
        await auth.decide(f"Bearer t{i}", "GET", "/metrics")
    assert len(auth._tokens) == ma.CACHE_ENTRIES
