"""Following a set of objects: list once, then watch, and see every change. Event-driven (no
polling); :func:`wait_for_objects` waits, bounded in time, until a predicate on the observed
objects holds, and a timeout reports the last state seen, so a failing test or start-up says
what it was waiting on."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncGenerator, Callable
from typing import Any

from lws_operator.kube.client import ApiError, Kube

Objects = dict[str, dict[str, Any]]


class WaitTimeout(TimeoutError):
    def __init__(self, what: str, timeout: float, last: str) -> None:
        super().__init__(
            f"timed out after {timeout:.0f}s waiting for {what}; last observed:\n{last}"
        )
        self.what = what
        self.last = last


def _key(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata", {})
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


def default_summary(objs: Objects) -> str:
    if not objs:
        return "(no objects)"
    return "\n".join(
        f"- {k}: {json.dumps(o.get('status', {}), sort_keys=True)[:600]}"
        for k, o in sorted(objs.items())
    )


def retry_after(error: ApiError) -> float | None:
    """Seconds the server asks us to wait before asking again (429 Too Many Requests: the
    watch cache of a resource is still initializing, as for a CRD just served, or API Priority
    and Fairness is shedding load), or None when the error is not one to wait out."""
    if error.status != 429:
        return None
    return float((error.body.get("details") or {}).get("retryAfterSeconds") or 1)


async def follow_objects(
    kube: Kube,
    path: str,
    *,
    label_selector: str | None = None,
    field_selector: str | None = None,
) -> AsyncGenerator[Objects, None]:
    """Yield the objects at collection ``path`` (keyed ``ns/name``) once listed, then again
    after each change a watch reports: the same dict, updated in place, so read it before the
    next step. A 410 Gone lists again; a 429 is waited out as the server says."""
    objs: Objects = {}
    while True:
        try:
            listing = await kube.list(
                path, label_selector=label_selector, field_selector=field_selector
            )
            objs.clear()
            objs.update({_key(o): o for o in listing.get("items", [])})
            rv = listing.get("metadata", {}).get("resourceVersion")
            yield objs
            while True:
                async for kind, obj in kube.watch(
                    path,
                    resource_version=rv,
                    label_selector=label_selector,
                    field_selector=field_selector,
                    timeout_seconds=60,
                ):
                    rv = obj.get("metadata", {}).get("resourceVersion", rv)
                    if kind == "BOOKMARK":
                        continue
                    if kind == "DELETED":
                        objs.pop(_key(obj), None)
                    else:
                        objs[_key(obj)] = obj
                    yield objs
        except ApiError as e:
            delay = retry_after(e)
            if delay is not None:
                await asyncio.sleep(delay)
            elif not e.gone:  # 410 Gone: our resourceVersion is too old; list again.
                raise


async def wait_for_objects(
    kube: Kube,
    path: str,
    done: Callable[[Objects], bool],
    *,
    timeout: float,
    what: str,
    label_selector: str | None = None,
    field_selector: str | None = None,
    summary: Callable[[Objects], str] = default_summary,
) -> Objects:
    """Return the objects at collection ``path`` (keyed ``ns/name``) once ``done`` holds."""
    async with contextlib.aclosing(
        follow_objects(kube, path, label_selector=label_selector, field_selector=field_selector)
    ) as updates:
        return await wait_on(updates, done, timeout=timeout, what=what, summary=summary)


async def wait_on(
    updates: AsyncGenerator[Objects, None],
    done: Callable[[Objects], bool],
    *,
    timeout: float,
    what: str,
    summary: Callable[[Objects], str] = default_summary,
) -> Objects:
    """Go on following ``updates`` (from :func:`follow_objects`) until ``done`` holds. A test
    that takes the listing before it acts and then waits here sees every object its action
    creates, however briefly it lives."""
    last: Objects = {}

    async def run() -> Objects:
        nonlocal last
        async for objs in updates:
            last = objs
            if done(objs):
                return objs
        raise AssertionError("follow_objects never ends")

    try:
        return await asyncio.wait_for(run(), timeout)
    except TimeoutError:
        raise WaitTimeout(what, timeout, summary(last)) from None
