"""Sends the writes the planners decide (plan/writes.py), for both controllers: one request
each, addressed by kind, namespace and name, and the write's event posted once it succeeded."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.events import EventRecorder
from lws_operator.kube.paths import resource_path
from lws_operator.plan.writes import Write


def write_path(namespace: str, write: Write, *, collection: bool = False) -> str:
    """The request's path: the collection for a create, else the object (or its status)."""
    api, plural = write.resource()
    name = None if collection else write.name
    sub = "status" if write.verb == "status" else None
    return resource_path(api, plural, namespace=namespace, name=name, subresource=sub)


@dataclass
class Executor:
    kube: Kube
    events: EventRecorder

    async def send(
        self, namespace: str, regarding: Mapping[str, Any], write: Write
    ) -> dict[str, Any] | None:
        """Send ``write``; post its event on ``regarding`` once it succeeded (a delete of an
        object already gone included). Returns the server's answer, or None when a create
        found the name taken or a delete found the object gone. When the server refuses:
        posts ``write.refused(message)`` if any, and raises the ApiError."""
        try:
            answer = await self._request(namespace, write)
        except ApiError as e:
            if write.verb == "create" and e.already_exists and write.exists_ok:
                return None
            if write.refused is not None:
                await self.events.post(dict(regarding), write.refused(e.message))
            raise
        if write.event is not None:
            await self.events.post(dict(regarding), write.event)
        return answer

    async def _request(self, namespace: str, write: Write) -> dict[str, Any] | None:
        kube, body = self.kube, dict(write.body or {})
        if write.verb == "create":
            return await kube.create(write_path(namespace, write, collection=True), body)
        path = write_path(namespace, write)
        if write.verb == "apply":
            return await kube.apply(path, body)
        if write.verb in ("patch", "status"):
            return await kube.patch(path, body, kind="merge")
        return await kube.delete(
            path,
            propagation=write.propagation,
            preconditions={"uid": write.uid} if write.uid else None,
            grace_period_seconds=write.grace_seconds,
        )
