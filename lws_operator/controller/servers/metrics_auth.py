"""Who may scrape ``/metrics``: controller-runtime's ``filters.WithAuthenticationAndAuthorization``,
which upstream LWS's manager serves its metrics behind.

A scrape carries a bearer token; a TokenReview tells whose it is (no token, or one the API
server does not accept: 401), and a SubjectAccessReview whether that user may ``get`` the
non-resource URL ``/metrics`` (the ``lws-metrics-reader`` ClusterRole; else 403). Decisions are
cached as controller-runtime caches them, so a scrape every few seconds costs no API call: a
token's review for a minute, an allowed access for five minutes, a denied one for 30 seconds,
each cache bounded (least recently used entries go first). A review that fails (API server
unreachable, the operator lacking the ``lws-proxy-role``) is answered 500 and not cached.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

log = logging.getLogger(__name__)

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
# controller-runtime's filter (pkg/metrics/filters): CacheTTL, AllowCacheTTL, DenyCacheTTL.
TOKEN_TTL = 60.0
ALLOW_TTL = 300.0
DENY_TTL = 30.0
CACHE_ENTRIES = 4096
# POST one review (path, body) and return the API server's answer.
Review = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]

K = TypeVar("K")
V = TypeVar("V")


class TtlCache(Generic[K, V]):
    """At most ``size`` entries, each until its own expiry; the least recently used goes first
    when full."""

    def __init__(self, size: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.size = size
        self.clock = clock
        self._entries: OrderedDict[K, tuple[float, V]] = OrderedDict()

    def get(self, key: K) -> V | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires, value = entry
        if expires <= self.clock():
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return value

    def put(self, key: K, value: V, ttl: float) -> None:
        self._entries[key] = (self.clock() + ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


@dataclass(frozen=True)
class User:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass(frozen=True)
class Decision:
    status: int  # 200 serve; 401, 403 refuse; 500 a review failed
    message: str = ""


# An authenticated user is cached as itself, a refused token as this.
_REFUSED = User("")


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, as the API server reads it
    (scheme case-insensitive, one space, nothing after a second space counts)."""
    parts = (authorization or "").strip().split(" ", 2)
    if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
        return None
    return parts[1]


def token_review(token: str) -> dict[str, Any]:
    return {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": token},
    }


def reviewed_user(review: dict[str, Any]) -> User | None:
    """The user a TokenReview answer authenticated, or None."""
    status = review.get("status") or {}
    user = status.get("user") or {}
    if status.get("authenticated") is not True or not user.get("username"):
        return None
    extra = user.get("extra") or {}
    return User(
        name=str(user["username"]),
        uid=str(user.get("uid") or ""),
        groups=tuple(str(g) for g in user.get("groups") or ()),
        extra=tuple(sorted((str(k), tuple(str(x) for x in v or ())) for k, v in extra.items())),
    )


def access_review(user: User, path: str, verb: str) -> dict[str, Any]:
    """The SubjectAccessReview of ``user`` doing ``verb`` on the non-resource URL ``path``."""
    spec: dict[str, Any] = {
        "user": user.name,
        "groups": list(user.groups),
        "nonResourceAttributes": {"path": path, "verb": verb},
    }
    if user.uid:
        spec["uid"] = user.uid
    if user.extra:
        spec["extra"] = {k: list(v) for k, v in user.extra}
    return {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": spec,
    }


def access_allowed(review: dict[str, Any]) -> bool:
    status = review.get("status") or {}
    return status.get("allowed") is True and status.get("denied") is not True


class ScrapeAuthorizer:
    """Decides each request to the metrics server; ``review`` posts a review to the API
    server (``Kube.create``)."""

    def __init__(self, review: Review, clock: Callable[[], float] = time.monotonic) -> None:
        self.review = review
        # Keyed by the token's hash: no token is kept in memory past its request.
        self._tokens: TtlCache[bytes, User] = TtlCache(CACHE_ENTRIES, clock)
        self._access: TtlCache[tuple[User, str, str], bool] = TtlCache(CACHE_ENTRIES, clock)

    async def decide(self, authorization: str | None, method: str, path: str) -> Decision:
        token = bearer_token(authorization)
        if token is None:
            return Decision(401, "Unauthorized")
        try:
            user = await self._authenticate(token)
        except Exception as e:
            log.warning("metrics: authentication failed: %s", e)
            return Decision(500, "Authentication failed")
        if user is None:
            return Decision(401, "Unauthorized")
        # controller-runtime: the verb is the HTTP method, lower-cased (GET -> get).
        verb = method.lower()
        try:
            allowed = await self._authorize(user, path, verb)
        except Exception as e:
            log.warning("metrics: authorization for user %s failed: %s", user.name, e)
            return Decision(500, f"Authorization for user {user.name} failed")
        if not allowed:
            log.debug("metrics: %s %s denied for user %s", verb, path, user.name)
            return Decision(403, f"Authorization denied for user {user.name}")
        return Decision(200)

    async def _authenticate(self, token: str) -> User | None:
        key = hashlib.sha256(token.encode()).digest()
        cached = self._tokens.get(key)
        if cached is None:
            cached = reviewed_user(await self.review(TOKEN_REVIEWS, token_review(token)))
            cached = cached or _REFUSED
            self._tokens.put(key, cached, TOKEN_TTL)
        return None if cached is _REFUSED else cached

    async def _authorize(self, user: User, path: str, verb: str) -> bool:
        key = (user, path, verb)
        cached = self._access.get(key)
        if cached is None:
            answer = await self.review(ACCESS_REVIEWS, access_review(user, path, verb))
            cached = access_allowed(answer)
            self._access.put(key, cached, ALLOW_TTL if cached else DENY_TTL)
        return cached
