"""A status computed from a stale LeaderWorkerSet is never written (issue 12.4): the status
patch carries the resourceVersion it was computed from, so the API server refuses it (409)
instead of letting it flip a condition back, move its lastTransitionTime and post its event
again. The race is forced: a reconcile runs in this process on a cache holding the LWS as it
was before the operator wrote its status, and the real objects otherwise."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from lws_operator.controller.lws.reconcile import Reconciler
from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.events import EventRecorder
from lws_operator.kube.paths import resource_path
from lws_testbed.snapshot import cache_of
from lws_testbed.wait import wait_for_objects
from tests.cluster.controller.helpers import lws_body, lws_path, wait_lws


def counted(events: Iterable[dict[str, Any]], reason: str) -> int:
    return sum((e.get("series") or {}).get("count", 1) for e in events if e["reason"] == reason)


async def event_count(kube: Kube, ns: str, uid: str, reason: str) -> int:
    listing = await kube.list(
        resource_path("events.k8s.io/v1", "events", namespace=ns),
        field_selector=f"regarding.uid={uid}",
    )
    return counted(listing["items"], reason)


async def wait_event_count(kube: Kube, ns: str, uid: str, reason: str) -> int:
    """The count of ``reason`` events once there is one: the operator posts an event after the
    status write it announces, so the condition can be seen before its event."""
    events = await wait_for_objects(
        kube,
        resource_path("events.k8s.io/v1", "events", namespace=ns),
        lambda objs: counted(objs.values(), reason) > 0,
        timeout=60,
        what=f"a {reason} event",
        field_selector=f"regarding.uid={uid}",
    )
    return counted(events.values(), reason)


async def test_a_status_computed_from_a_stale_lws_is_not_written(
    kube: Kube,
    lws_namespace: str,
    pause_session_operator: Callable[[], contextlib.AbstractAsyncContextManager[None]],
) -> None:
    ns, name = lws_namespace, "racy"
    stale = await kube.create(lws_path(ns), lws_body(name, replicas=1, size=1))
    fresh = await wait_lws(
        kube,
        ns,
        name,
        lambda o: any(
            c["type"] == "Available" and c["status"] == "True"
            for c in (o.get("status") or {}).get("conditions") or []
        ),
        "Available",
    )
    uid = fresh["metadata"]["uid"]
    announced = await wait_event_count(kube, ns, uid, "AllGroupsReady")
    assert announced == 1
    async with pause_session_operator():
        fresh = await kube.get(lws_path(ns, name))  # as the operator left it
        cache = await cache_of(kube, ns, {(ns, name): stale})
        reconciler = Reconciler(kube, cache, EventRecorder(kube))
        with pytest.raises(ApiError) as lost:  # the work queue retries it on fresh state
            await reconciler((ns, name))
        now = await kube.get(lws_path(ns, name))
    assert lost.value.conflict, lost.value
    assert now["metadata"]["resourceVersion"] == fresh["metadata"]["resourceVersion"]
    assert now["status"] == fresh["status"]
    assert await event_count(kube, ns, uid, "AllGroupsReady") == announced
