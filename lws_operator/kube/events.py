"""Kubernetes Events (``events.k8s.io/v1``), as upstream's recorder ``leaderworkerset`` writes
them: ``kubectl describe lws`` and ``kubectl events`` show them.

Posting is best effort: an event that cannot be written is logged, never raised, so it can
never fail a reconcile."""

from __future__ import annotations

import datetime
import logging
import os
import secrets
import socket
from typing import Any

from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.paths import resource_path

log = logging.getLogger(__name__)

REPORTING_CONTROLLER = "leaderworkerset"
NORMAL = "Normal"
WARNING = "Warning"
# The API server rejects notes longer than 1 KiB.
_NOTE_MAX = 1024


def _micro_time() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def object_reference(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    ref = {
        "apiVersion": obj.get("apiVersion", ""),
        "kind": obj.get("kind", ""),
        "name": meta.get("name", ""),
        "namespace": meta.get("namespace", ""),
        "uid": meta.get("uid", ""),
    }
    if rv := meta.get("resourceVersion"):
        ref["resourceVersion"] = rv
    return ref


class EventRecorder:
    def __init__(self, kube: Kube, instance: str | None = None) -> None:
        self._kube = kube
        self._instance = instance or os.environ.get("POD_NAME") or socket.gethostname()
        self.posted = 0

    def event_body(
        self, regarding: dict[str, Any], event_type: str, reason: str, action: str, note: str
    ) -> dict[str, Any]:
        ref = object_reference(regarding)
        return {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {
                "name": f"{ref['name']}.{secrets.token_hex(8)}",
                "namespace": ref["namespace"] or "default",
            },
            "eventTime": _micro_time(),
            "reportingController": REPORTING_CONTROLLER,
            "reportingInstance": self._instance,
            "action": action,
            "reason": reason,
            "note": note[:_NOTE_MAX],
            "type": event_type,
            "regarding": ref,
        }

    async def post(
        self,
        regarding: dict[str, Any],
        event_type: str,
        reason: str,
        action: str,
        note: str,
    ) -> None:
        body = self.event_body(regarding, event_type, reason, action, note)
        path = resource_path("events.k8s.io/v1", "events", namespace=body["metadata"]["namespace"])
        try:
            await self._kube.create(path, body)
            self.posted += 1
        except (ApiError, OSError) as e:
            log.warning("could not post event %s/%s: %s", reason, note, e)
