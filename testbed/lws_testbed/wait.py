"""Waiting for a condition over a set of objects: list once, then watch, until a predicate on
the observed objects holds. Event-driven (no polling) and bounded in time; a timeout reports
the last state seen, so a failing test or start-up says what it was waiting on."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
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
    objs: Objects = {}

    async def run() -> None:
        while True:
            listing = await kube.list(
                path, label_selector=label_selector, field_selector=field_selector
            )
            objs.clear()
            objs.update({_key(o): o for o in listing.get("items", [])})
            rv = listing.get("metadata", {}).get("resourceVersion")
            if done(objs):
                return
            try:
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
                        if done(objs):
                            return
            except ApiError as e:
                if not e.gone:
                    raise
                # 410 Gone: our resourceVersion is too old; list again.

    try:
        await asyncio.wait_for(run(), timeout)
    except TimeoutError:
        raise WaitTimeout(what, timeout, summary(objs)) from None
    return objs
