"""A write a planner decides and an executor sends (controller/runtime/execute.py): the one
model of a request to the API server for both controllers. Objects are addressed one way, by
kind, namespace and name; ``KINDS`` gives each kind's API version and plural.

Planners return writes in the order they must be sent; the executor sends them and posts each
one's event once it succeeded. What happens after a refusal is the reconciler's to say (the
LeaderWorkerSet's stops its pass, the DisaggregatedSet's reports and goes on)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from lws_operator.api import constants as lc
from lws_operator.api import ds_constants as dc
from lws_operator.plan.events import Event

Verb = Literal["create", "apply", "patch", "status", "delete"]

# Each kind written: (API version, plural). A kind whose version is chosen at run time (a gang
# PodGroup) names it on the write (``Write.api_version``).
KINDS: Mapping[str, tuple[str, str]] = {
    "Pod": ("v1", "pods"),
    "Service": ("v1", "services"),
    "ConfigMap": ("v1", "configmaps"),
    "StatefulSet": ("apps/v1", "statefulsets"),
    "ControllerRevision": ("apps/v1", "controllerrevisions"),
    lc.KIND: (lc.API_VERSION, lc.PLURAL),
    dc.KIND: (dc.API_VERSION, dc.PLURAL),
    dc.SCALER_KIND: (dc.API_VERSION, dc.SCALER_PLURAL),
    "PodGroup": ("", "podgroups"),
}


@dataclass(frozen=True)
class Write:
    """One request. ``create``: ``body``, and an object of that name already there is no
    error (the cache had not shown it yet, or it is someone else's: the caller looks).
    ``apply``: server-side apply of ``body``. ``patch``: a merge patch of the object,
    ``status``: of its status subresource. ``delete``: with ``propagation`` and the grace
    period given, and only the object with ``uid`` (a precondition); one already gone is no
    error."""

    verb: Verb
    kind: str
    name: str
    body: Mapping[str, Any] | None = None
    uid: str | None = None
    propagation: Literal["Background", "Foreground"] | None = None
    grace_seconds: int | None = None
    api_version: str | None = None
    """The API version when the kind's is chosen at run time (``KINDS`` has none)."""
    event: Event | None = None
    """Posted once the request succeeded (not when a create found its name taken)."""
    refused: Callable[[str], Event] | None = None
    """Posted with the server's message when it refuses the request."""
    exists_ok: bool = True
    """A create that finds its name taken: no error (True), or refused like any other."""

    def resource(self) -> tuple[str, str]:
        """(API version, plural)."""
        api, plural = KINDS[self.kind]
        return self.api_version or api, plural
