"""Regression (found by the conflict-injection test): a group recreation deleted the leader,
the worker StatefulSet and the worker pods at once; when only the leader's deletion failed (a
409), the workers were gone, the failed pod's evidence with them, and the next pass rebuilt the
workers under the old leader: a half-recreated group. The leader is now deleted first, alone."""

from __future__ import annotations

from typing import Any

import pytest

from lws_operator.controller.lws import reconcile
from lws_operator.controller.lws.cache import Cache
from lws_operator.controller.lws.steps import Steps
from lws_operator.kube.client import ApiError
from lws_operator.plan.events import Event
from lws_operator.plan.lws.reconcile import DeleteGroup
from lws_operator.plan.lws.restart import Recreate, group_deletion
from tests.unit.api.lws_testdata import base_object


def _obj(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "uid": f"uid-{name}"}}


class _Kube:
    def __init__(self, refuse: set[str]) -> None:
        self.refuse = refuse
        self.deleted: list[str] = []

    async def delete(self, path: str, **kw: Any) -> None:
        name = path.rsplit("/", 1)[-1]
        if name in self.refuse:
            raise ApiError(409, "Conflict", "the object has been modified", None)
        self.deleted.append(name)


class _Events:
    def __init__(self) -> None:
        self.reasons: list[str] = []

    async def post(self, obj: Any, event: Event) -> None:
        self.reasons.append(event.reason)


async def _recreate(kube: _Kube, events: _Events, recreate: Recreate) -> None:
    """Take the step a pass plans for a recreation."""
    body = base_object("lws")
    body["metadata"].update(namespace="ns", uid="u1", generation=1)
    r = reconcile.Reconciler(kube=kube, cache=Cache(), events=events)  # type: ignore[arg-type]
    steps = Steps(
        r.executor, r.events, None, r.metrics, ("ns", "lws"), body, reconcile.Memory(), {}
    )
    writes = group_deletion(recreate.leader, recreate.workers, recreate.members)
    await steps._take(DeleteGroup(recreate.index, writes, recreated=recreate))


PLAN = Recreate(
    index=1,
    leader=_obj("lws-1"),
    workers=_obj("lws-1-sts"),
    members=(_obj("lws-1"), _obj("lws-1-1"), _obj("lws-1-2")),
    culprit="lws-1-1",
    why="restarted",
)


async def test_nothing_else_is_deleted_when_the_leader_deletion_fails() -> None:
    kube, events = _Kube(refuse={"lws-1"}), _Events()
    with pytest.raises(ApiError):
        await _recreate(kube, events, PLAN)
    assert kube.deleted == [] and events.reasons == []


async def test_the_leader_goes_first_and_the_rest_is_best_effort() -> None:
    kube, events = _Kube(refuse={"lws-1-2"}), _Events()
    await _recreate(kube, events, PLAN)
    assert kube.deleted[0] == "lws-1" and set(kube.deleted) == {"lws-1", "lws-1-sts", "lws-1-1"}
    assert events.reasons == ["RecreateGroup"]
