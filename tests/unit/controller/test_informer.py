import asyncio
from collections.abc import AsyncIterator
from typing import Any, cast

from lws_operator.api import constants as c
from lws_operator.controller.lws.cache import project_pod, project_revision
from lws_operator.controller.runtime.informer import Informer
from lws_operator.kube.client import ApiError, Kube


def pod(name: str, lws: str | None, rv: str = "1", ns: str = "ns") -> dict[str, Any]:
    labels = {c.SET_NAME_LABEL: lws} if lws else {}
    owner = {"uid": "sts-uid", "controller": True, "kind": "StatefulSet", "name": lws}
    meta = {"name": name, "namespace": ns, "resourceVersion": rv, "labels": labels}
    return {"metadata": {**meta, "ownerReferences": [owner]}, "spec": {}, "status": {}}


def informer() -> tuple[Informer, list[tuple[str, tuple[str, str], str]]]:
    seen: list[tuple[str, tuple[str, str], str]] = []
    inf = Informer(
        cast(Kube, None),
        "/api/v1/pods",
        project_pod,
        lambda kind, key, obj: seen.append((kind, key, obj["metadata"]["name"])),
    )
    return inf, seen


def names(inf: Informer, key: tuple[str, str]) -> set[str]:
    return {o["metadata"]["name"] for o in inf.get(key).values()}


def test_events_keep_projections_by_lws_and_wake_it() -> None:
    inf, seen = informer()
    inf.apply("ADDED", pod("a-0", "a"))
    inf.apply("ADDED", pod("b-0", "b"))
    inf.apply("MODIFIED", pod("a-0", "a", rv="2"))
    assert names(inf, ("ns", "a")) == {"a-0"} and len(inf) == 2
    kept = inf.get(("ns", "a"))["a-0"]
    assert kept["metadata"]["resourceVersion"] == "2"
    assert "spec" in kept and "containers" not in kept["spec"]
    inf.apply("DELETED", pod("a-0", "a", rv="3"))
    assert names(inf, ("ns", "a")) == set() and len(inf) == 1
    assert seen == [
        ("ADDED", ("ns", "a"), "a-0"),
        ("ADDED", ("ns", "b"), "b-0"),
        ("MODIFIED", ("ns", "a"), "a-0"),
        ("DELETED", ("ns", "a"), "a-0"),
    ]


def test_an_object_relabelled_moves_and_the_old_lws_sees_it_go() -> None:
    inf, seen = informer()
    inf.apply("ADDED", pod("x", "a"))
    inf.apply("MODIFIED", pod("x", "b", rv="2"))
    assert names(inf, ("ns", "a")) == set() and names(inf, ("ns", "b")) == {"x"}
    inf.apply("MODIFIED", pod("x", None, rv="3"))
    assert len(inf) == 0
    assert seen[1:] == [
        ("DELETED", ("ns", "a"), "x"),
        ("MODIFIED", ("ns", "b"), "x"),
        ("DELETED", ("ns", "b"), "x"),
    ]


def test_objects_that_do_not_project_are_neither_kept_nor_reported() -> None:
    seen: list[str] = []
    inf = Informer(cast(Kube, None), "/x", project_revision, lambda k, key, o: seen.append(k))
    sts_revision = pod("r", "a")
    sts_revision["metadata"]["ownerReferences"][0]["kind"] = "StatefulSet"
    inf.apply("ADDED", sts_revision)
    assert len(inf) == 0 and seen == []


def test_a_relist_reports_only_changes_and_what_vanished_unwatched() -> None:
    inf, seen = informer()
    inf.replace([pod("a-0", "a"), pod("a-1", "a"), pod("b-0", "b")])
    assert len(inf) == 3 and len(seen) == 3
    seen.clear()
    inf.replace([pod("a-0", "a"), pod("b-0", "b", rv="5"), pod("c-0", "c")])
    assert sorted(seen) == [
        ("ADDED", ("ns", "c"), "c-0"),
        ("DELETED", ("ns", "a"), "a-1"),
        ("MODIFIED", ("ns", "b"), "b-0"),
    ]
    # the vanished pod is reported with its last projection: owner and name for lost pods
    assert names(inf, ("ns", "a")) == {"a-0"} and len(inf) == 3


def test_same_names_in_two_namespaces_are_two_objects() -> None:
    inf, _ = informer()
    inf.apply("ADDED", pod("a-0", "a", ns="one"))
    inf.apply("ADDED", pod("a-0", "a", ns="two"))
    inf.apply("DELETED", pod("a-0", "a", ns="one"))
    assert names(inf, ("two", "a")) == {"a-0"} and names(inf, ("one", "a")) == set()


class _Unserved:
    """A client whose list answers 404 once (the resource is not served), then one pod;
    its watches stay open without events."""

    def __init__(self) -> None:
        self.lists = 0

    async def list(self, path: str, **kw: Any) -> dict[str, Any]:
        self.lists += 1
        if self.lists == 1:
            raise ApiError(
                404, "NotFound", "the server could not find the requested resource", None
            )
        return {"metadata": {"resourceVersion": "7"}, "items": [pod("a-0", "a")]}

    async def watch(self, path: str, **kw: Any) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        await asyncio.Event().wait()
        yield "BOOKMARK", {}


async def test_a_resource_not_served_counts_as_listed_and_is_picked_up_later() -> None:
    kube = _Unserved()
    added = asyncio.Event()
    inf = Informer(cast(Kube, kube), "/apis/x/v1/podgroups", project_pod, lambda *_: added.set())
    task = asyncio.create_task(inf.run())
    try:
        await asyncio.wait_for(inf.synced.wait(), 5)  # reconciles are not held up
        assert len(inf) == 0 and kube.lists == 1
        await asyncio.wait_for(added.wait(), 5)  # the retry after the backoff lists it
        assert names(inf, ("ns", "a")) == {"a-0"} and kube.lists == 2
    finally:
        task.cancel()
