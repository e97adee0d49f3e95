"""Recording, by watches, every version of every pod, Workload and StatefulSet of a namespace,
and checking afterwards that no pod lost Kueue's admission gate while its group's Workload was
not admitted (Kueue's quota never bypassed).

Order across the three watches comes from resourceVersions: on a cluster with one etcd (the
local cluster) they are etcd revisions, one increasing sequence for every object. That is an
implementation detail Kubernetes does not promise to clients, so this is for the local cluster
only.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from lws_operator.api import constants as c
from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.paths import resource_path
from lws_operator.plan.meta import labels_of
from lws_testbed import kueue
from tests.cluster.kueue.helpers import admitted, gated, is_true, owned_by, workload_index


@dataclass(frozen=True)
class Version:
    rv: int
    kind: str  # ADDED, MODIFIED, DELETED
    obj: dict[str, Any]


@dataclass
class Recording:
    pods: dict[str, list[Version]] = field(default_factory=dict)  # by uid
    workloads: dict[str, list[Version]] = field(default_factory=dict)  # by uid
    statefulsets: dict[str, list[Version]] = field(default_factory=dict)  # by name
    added: asyncio.Condition = field(default_factory=asyncio.Condition)

    def add(self, what: str, kind: str, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        store = getattr(self, what)
        version = Version(int(meta["resourceVersion"]), kind, obj)
        store.setdefault(_key(what, meta), []).append(version)

    def holds(self, what: str, obj: dict[str, Any]) -> bool:
        """Whether this version of ``obj`` is recorded."""
        meta = obj["metadata"]
        rv = int(meta["resourceVersion"])
        return any(v.rv == rv for v in getattr(self, what).get(_key(what, meta), ()))


def _key(what: str, meta: dict[str, Any]) -> str:
    return str(meta["name"] if what == "statefulsets" else meta["uid"])


async def _follow(kube: Kube, path: str, what: str, rec: Recording, started: asyncio.Event) -> None:
    listing = await kube.list(path)
    rv = listing["metadata"]["resourceVersion"]
    for obj in listing["items"]:
        rec.add(what, "ADDED", obj)
    started.set()
    while True:
        try:
            async for kind, obj in kube.watch(path, resource_version=rv, timeout_seconds=60):
                rv = obj["metadata"].get("resourceVersion", rv)
                if kind != "BOOKMARK":
                    async with rec.added:
                        rec.add(what, kind, obj)
                        rec.added.notify_all()
        except ApiError as e:
            if e.gone:  # our resourceVersion was compacted: versions in between are lost
                raise AssertionError(f"the {what} watch expired (410): recording incomplete") from e
            raise


@contextlib.asynccontextmanager
async def recording(kube: Kube, namespace: str) -> AsyncIterator[Recording]:
    """Record the namespace's pods, Workloads and StatefulSets for the block."""
    rec = Recording()
    paths = {
        "pods": resource_path("v1", "pods", namespace=namespace),
        "workloads": kueue.path("workloads", namespace),
        "statefulsets": resource_path("apps/v1", "statefulsets", namespace=namespace),
    }
    events = {what: asyncio.Event() for what in paths}
    tasks = [
        asyncio.create_task(_follow(kube, path, what, rec, events[what]))
        for what, path in paths.items()
    ]
    await asyncio.wait([asyncio.ensure_future(e.wait()) for e in events.values()])
    try:
        yield rec
        await _catch_up(kube, paths, rec)
    except BaseException:
        print(f"--- the last versions recorded in {namespace}:\n{timeline(rec, 2**62, 60)}")
        raise
    finally:
        for t in tasks:
            t.cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException) and not isinstance(result, asyncio.CancelledError):
                raise result


async def _catch_up(kube: Kube, paths: dict[str, str], rec: Recording, timeout: float = 30) -> None:
    """Wait until the watches have recorded every object's current version: the block's own
    waits see changes through watches of their own, which can be ahead of these (a check made
    at once could miss the change the block waited for)."""
    current = [(what, o) for what, path in paths.items() for o in (await kube.list(path))["items"]]

    def missing() -> list[str]:
        return [
            f"{what} {o['metadata']['name']}@{o['metadata']['resourceVersion']}"
            for what, o in current
            if not rec.holds(what, o)
        ]

    async with rec.added:
        try:
            await asyncio.wait_for(rec.added.wait_for(lambda: not missing()), timeout)
        except TimeoutError:
            late = missing()
            note = f"the recording did not catch up within {timeout}s: {late}"
            raise AssertionError(note) from None


@dataclass(frozen=True)
class Ungating:
    pod: str
    uid: str
    rv: int
    group: str | None
    workload: str | None
    workload_admitted: bool
    why: str


def _state_at(versions: list[Version], rv: int) -> Version | None:
    """The latest version at or before ``rv``."""
    before = [v for v in versions if v.rv <= rv]
    return before[-1] if before else None


def ungatings(rec: Recording, lws_uid: str) -> list[Ungating]:
    """Every pod of the LWS that lost the admission gate while not being deleted, with the
    state of its group's Workload (the one owned by the LWS with the pod's group index) just
    before: the moment Kueue ungated it."""
    out = []
    for uid, versions in rec.pods.items():
        first = versions[0].obj
        if kueue.SUSPENDING_PARENT_ANNOTATION not in (first["metadata"].get("annotations") or {}):
            continue  # not a pod Kueue manages as part of an LWS
        for before, after in itertools.pairwise(versions):
            if not gated(before.obj) or gated(after.obj) or after.kind == "DELETED":
                continue
            if after.obj["metadata"].get("deletionTimestamp"):
                continue  # Kueue ungates and finalizes pods on their way out
            group = labels_of(after.obj).get(c.GROUP_INDEX_LABEL)
            # A group index can have had several Workloads (scaled away and back): the one
            # that existed just before the ungating counts.
            states = [
                state
                for vs in rec.workloads.values()
                if owned_by(vs[0].obj, lws_uid) and str(workload_index(vs[0].obj)) == group
                if (state := _state_at(vs, after.rv - 1)) is not None and state.kind != "DELETED"
            ]
            # Admitted, and not being evicted (Kueue stops a group's pods before it clears the
            # admission: a pod ungated meanwhile runs on quota that is being taken back).
            ok = any(admitted(st.obj) and not is_true(st.obj, "Evicted") for st in states)
            state = states[-1] if states else None
            why = "admitted" if ok else ("no Workload" if state is None else _describe(state))
            out.append(
                Ungating(
                    pod=after.obj["metadata"]["name"],
                    uid=uid,
                    rv=after.rv,
                    group=group,
                    workload=state.obj["metadata"]["name"] if state else None,
                    workload_admitted=ok,
                    why=why,
                )
            )
    return out


def _describe(v: Version) -> str:
    conds = (v.obj.get("status") or {}).get("conditions") or []
    return f"{v.kind} " + ", ".join(f"{x['type']}={x['status']}({x.get('reason')})" for x in conds)


def created_gated(rec: Recording) -> dict[str, bool]:
    """Pod name@uid -> whether its first version carried the admission gate (Kueue's pod
    webhook adds it at creation)."""
    return {
        f"{vs[0].obj['metadata']['name']}@{uid[:8]}": gated(vs[0].obj)
        for uid, vs in rec.pods.items()
        if kueue.SUSPENDING_PARENT_ANNOTATION in (vs[0].obj["metadata"].get("annotations") or {})
    }


def controllers_labelled(rec: Recording, lws_name: str) -> list[str]:
    """Pods whose controlling StatefulSet did not exist with the LWS name label when the pod
    was created (Kueue ungates those at once, without a quota check)."""
    bad = []
    for versions in rec.pods.values():
        pod = versions[0].obj
        ref = next(
            (r for r in pod["metadata"].get("ownerReferences") or [] if r.get("controller")), None
        )
        sts_versions = rec.statefulsets.get(ref["name"], []) if ref else []
        state = _state_at(sts_versions, versions[0].rv)
        if (
            ref is None
            or ref.get("kind") != "StatefulSet"
            or state is None
            or state.kind == "DELETED"
            or labels_of(state.obj).get(c.SET_NAME_LABEL) != lws_name
        ):
            bad.append(pod["metadata"]["name"])
    return bad


def outlived_statefulsets(rec: Recording) -> list[str]:
    """Pods still there, not being deleted, when their controlling StatefulSet was gone: for
    that moment Kueue finds no StatefulSet for them and ungates them without a quota check."""
    gone = {
        vs[-1].obj["metadata"]["uid"]: vs[-1].rv
        for vs in rec.statefulsets.values()
        if vs[-1].kind == "DELETED"
    }
    # A StatefulSet name can be reused: every incarnation's deletion counts.
    for vs in rec.statefulsets.values():
        for a, b in itertools.pairwise(vs):
            if b.kind == "DELETED":
                gone[b.obj["metadata"]["uid"]] = b.rv
            elif a.obj["metadata"]["uid"] != b.obj["metadata"]["uid"]:
                gone.setdefault(a.obj["metadata"]["uid"], b.rv)
    bad = []
    for versions in rec.pods.values():
        ref = next(
            (
                r
                for r in versions[0].obj["metadata"].get("ownerReferences") or []
                if r.get("controller")
            ),
            None,
        )
        if ref is None or ref.get("uid") not in gone:
            continue
        state = _state_at(versions, gone[ref["uid"]])
        if (
            state is not None
            and state.kind != "DELETED"
            and not state.obj["metadata"].get("deletionTimestamp")
        ):
            bad.append(
                f"{versions[0].obj['metadata']['name']} (StatefulSet gone at rv {gone[ref['uid']]})"
            )
    return bad


def check_never_bypassed(rec: Recording, lws_name: str, lws_uid: str) -> list[Ungating]:
    """Assert Kueue's quota held for every pod recorded; returns the ungatings seen."""
    created = created_gated(rec)
    assert created, "no pod recorded"
    assert all(created.values()), f"pods created without the admission gate: {created}"
    unlabelled = controllers_labelled(rec, lws_name)
    assert not unlabelled, f"pods made without a labelled StatefulSet: {unlabelled}"
    outlived = outlived_statefulsets(rec)
    assert not outlived, f"pods left without their StatefulSet: {outlived}"
    seen = ungatings(rec, lws_uid)
    bypassed = [u for u in seen if not u.workload_admitted]
    assert not bypassed, (
        "pods ungated while their group's Workload was not admitted:\n"
        + "\n".join(
            f"- {u.pod} ({u.uid[:8]}) group {u.group} at rv {u.rv}: Workload {u.workload}: {u.why}"
            for u in bypassed
        )
        + "\ntimeline up to the first:\n"
        + timeline(rec, bypassed[0].rv)
    )
    return seen


def timeline(rec: Recording, rv: int, before: int = 40) -> str:
    """The last ``before`` recorded versions up to ``rv``, one line each."""
    rows: list[tuple[int, str]] = []
    for what, store in (
        ("pod", rec.pods),
        ("workload", rec.workloads),
        ("statefulset", rec.statefulsets),
    ):
        for versions in store.values():
            for v in versions:
                if v.rv <= rv:
                    rows.append((v.rv, f"{v.rv} {v.kind:8} {what} {_brief(what, v.obj)}"))
    return "\n".join(line for _, line in sorted(rows)[-before:])


def _brief(what: str, obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    name = meta["name"]
    deleting = " deleting" if meta.get("deletionTimestamp") else ""
    if what == "pod":
        gates = [g["name"] for g in obj["spec"].get("schedulingGates") or []]
        return f"{name} gates={gates}{deleting} phase={obj.get('status', {}).get('phase')}"
    if what == "workload":
        conds = (obj.get("status") or {}).get("conditions") or []
        return f"{name} " + ",".join(f"{x['type']}={x['status']}" for x in conds) + deleting
    status = obj.get("status") or {}
    return (
        f"{name} replicas={obj['spec'].get('replicas')} current={status.get('currentRevision')} "
        f"update={status.get('updateRevision')} finalizers={meta.get('finalizers')}{deleting}"
    )
