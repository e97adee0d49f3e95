"""A DisaggregatedSet and its children as plain dicts, for the planner's tests: the writes of
a plan applied as the API server would apply them, and the LeaderWorkerSet controller
simulated by making every group ready at once (upstream's ``simulateAllReady``)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lws_operator.api import ds_constants as c
from lws_operator.api.ds_models import DisaggregatedSet
from lws_operator.plan.ds.reconcile import DsPlan, Write, plan_disaggregated_set
from lws_operator.plan.events import Event

NOW = "2026-01-01T00:00:00Z"
UID = "ds-uid"


def container(image: str = "nginx:1") -> dict[str, Any]:
    return {"name": "c", "image": image}


def role(
    name: str,
    replicas: int = 1,
    *,
    image: str = "nginx:1",
    size: int = 1,
    surge: int | str | None = None,
    unavailable: int | str | None = None,
    external: bool = False,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A role as the API server stores it (its CRD defaults applied)."""
    spec: dict[str, Any] = {
        "replicas": replicas,
        "startupPolicy": "LeaderCreated",
        "leaderWorkerTemplate": {
            "size": size,
            "restartPolicy": "RecreateGroupOnPodRestart",
            "workerTemplate": {"spec": {"containers": [container(image)]}},
        },
    }
    if surge is not None or unavailable is not None:
        spec["rolloutStrategy"] = {
            "type": "RollingUpdate",
            "rollingUpdateConfiguration": {
                "partition": 0,
                "maxSurge": 0 if surge is None else surge,
                "maxUnavailable": 1 if unavailable is None else unavailable,
            },
        }
    out: dict[str, Any] = {"name": name, "spec": spec}
    if external:
        out["scaling"] = {"mode": "External"}
    if labels:
        out["metadata"] = {"labels": dict(labels)}
    return out


def ds_body(name: str, *roles: dict[str, Any], slices: int = 1, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.KIND,
        "metadata": {"name": name, "namespace": "ns", "uid": UID, "generation": 1},
        "spec": {"roles": list(roles), "slices": slices, **spec},
    }


def _merge(target: dict[str, Any], patch: Mapping[str, Any]) -> None:
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


@dataclass
class World:
    ds: dict[str, Any]
    lws: dict[str, dict[str, Any]] = field(default_factory=dict)
    services: dict[str, dict[str, Any]] = field(default_factory=dict)
    scalers: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    clock: int = 0

    def store(self, kind: str) -> dict[str, dict[str, Any]]:
        return {"LeaderWorkerSet": self.lws, "Service": self.services}.get(kind, self.scalers)

    def plan(self) -> DsPlan:
        return plan_disaggregated_set(
            DisaggregatedSet.model_validate(self.ds),
            body=self.ds,
            lws=self.lws,
            services=self.services,
            scalers=self.scalers,
            now=NOW,
        )

    def created(self) -> str:
        self.clock += 1
        return f"2026-01-01T00:{self.clock // 60:02d}:{self.clock % 60:02d}Z"

    def apply(self, write: Write) -> None:
        if write.kind == c.KIND:
            assert write.verb == "status" and write.body is not None
            _merge(self.ds, write.body)
            return
        store = self.store(write.kind)
        if write.verb == "create":
            assert write.body is not None and write.name not in store, write.name
            body = copy.deepcopy(write.body)
            body["metadata"].update(
                uid=f"uid-{write.name}", creationTimestamp=self.created(), generation=1
            )
            if write.kind == "LeaderWorkerSet":
                body["status"] = {}
            store[write.name] = body
        elif write.verb == "delete":
            assert store[write.name]["metadata"]["uid"] == write.uid
            del store[write.name]
        else:
            assert write.body is not None
            _merge(store[write.name], write.body)
        if write.event is not None:
            self.events.append(write.event)

    def reconcile(self) -> DsPlan:
        plan = self.plan()
        for write in plan.writes:
            self.apply(write)
        self.events += plan.events
        return plan

    def ready(self) -> None:
        """Every LWS's groups exist, ready and updated."""
        for lws in self.lws.values():
            n = lws["spec"].get("replicas", 1)
            lws["status"] = {"replicas": n, "readyReplicas": n, "updatedReplicas": n}

    def replicas(self) -> dict[str, int]:
        return {name: lws["spec"].get("replicas", 1) for name, lws in self.lws.items()}

    def converge(self, limit: int = 60) -> list[dict[str, int]]:
        """Reconcile and make ready until nothing is written but status; the replicas of
        every LWS after each pass."""
        seen = [self.replicas()]
        for _ in range(limit):
            plan = self.reconcile()
            self.ready()
            seen.append(self.replicas())
            quiet = all(w.verb == "status" for w in plan.writes)
            if quiet and all(w.verb == "status" for w in self.plan().writes):
                return seen
        raise AssertionError(f"did not converge in {limit} passes: {seen[-3:]}")
