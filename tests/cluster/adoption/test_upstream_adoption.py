"""Taking over LeaderWorkerSets that the upstream controller created restarts no pod.

The upstream manager (kubernetes-sigs/lws **v0.9.0**, not v0.10.0, the version this project
targets: the Go module proxy refuses v0.10.0 here) runs first, with its own CRD and webhooks,
and creates three LeaderWorkerSets: one at rest, one frozen in the middle of a rolling update
(its new leader template asks for a node that does not exist, so the first replaced group stays
Pending) and one with ``networkConfig: UniquePerReplica``. Then upstream is stopped, our CRD
replaces upstream's, and our operator starts. Every pod, StatefulSet, Service and
ControllerRevision must be the same object afterwards, with the same restart counts and the
same revision keys; and later changes (a scale-up, finishing the rollout with a new template)
must proceed as usual.

Upstream and our operator must never run against one control plane at the same time, so this
module starts a local cluster of its own and does not use the session's ``operator``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lws_operator.api import constants as c
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_operator.plan.meta import labels_of, pod_ready
from lws_testbed import upstream
from lws_testbed.local import ClusterConfig, LocalCluster
from lws_testbed.lws_api import install_lws_api, wait_lws_api
from lws_testbed.manifests import create_namespace
from lws_testbed.operator_process import start_operator
from lws_testbed.wait import Objects, wait_for_objects
from tests.cluster.conftest import upstream_bins_or_skip
from tests.cluster.controller.helpers import (
    condition,
    container,
    is_available,
    list_of,
    lws_body,
    lws_path,
    lws_revisions,
    wait_lws,
    wait_pods,
)

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("LWS_TEST_KUBECONFIG")),
    reason="runs the upstream LWS controller against a local cluster of its own; against "
    "LWS_TEST_KUBECONFIG it would take over (and fight for) that cluster's LeaderWorkerSets",
)

NS = "adoption"
TIMEOUT = 90
# One field manager for both CRDs, as `kubectl apply --server-side` uses for both in a real
# takeover: our CRD then replaces upstream's wholesale instead of merging with it.
CRD_MANAGER = "lws-adoption-test"
ADMISSION = "admissionregistration.k8s.io/v1"
# A node label no node has: pods of a template asking for it stay Pending.
NOWHERE = {"lws-adoption-test/nowhere": "true"}
# An LWS annotation our operator copies onto the leader StatefulSet: proof of a reconcile.
PROBE = "lws-adoption-test/probe"
ROLLING = {"type": "RollingUpdate", "rollingUpdateConfiguration": {"maxUnavailable": 1}}
NAMES = ("a", "b", "c")


@pytest.fixture(scope="module")
def upstream_bins() -> Path:
    """The upstream manager and its CRDs, built when missing; skips when that is impossible."""
    return upstream_bins_or_skip()


@pytest.fixture(scope="module")
def cluster(
    upstream_bins: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    """A local cluster for this module alone. Started outside the event loop:
    LocalCluster.start() runs one of its own."""
    own = LocalCluster(ClusterConfig(state_dir=tmp_path_factory.mktemp("adoption-cluster")))
    own.start()
    try:
        yield own
    finally:
        own.stop()


# ---- what must not change ----------------------------------------------------------------------
@dataclass(frozen=True)
class Snapshot:
    # name -> (uid, restart count of each container)
    pods: dict[str, tuple[str, tuple[int, ...]]]
    # name -> (uid, status.currentRevision, status.updateRevision)
    statefulsets: dict[str, tuple[str, str, str]]
    services: dict[str, str]
    # LWS-owned ControllerRevisions: name -> (uid, revision key)
    lws_revisions: dict[str, tuple[str, str]]
    # the StatefulSets' own ControllerRevisions (a new one means a new pod template)
    sts_revisions: dict[str, str]


async def snapshot(kube: Kube, name: str) -> Snapshot:
    pods = await list_of(kube, "v1", "pods", NS, name)
    sts = await list_of(kube, "apps/v1", "statefulsets", NS, name)
    services = await list_of(kube, "v1", "services", NS, name)
    all_revisions = await list_of(kube, "apps/v1", "controllerrevisions", NS, name)
    ours = await lws_revisions(kube, NS, name)
    return Snapshot(
        pods={
            n: (
                p["metadata"]["uid"],
                tuple(
                    int(s.get("restartCount", 0))
                    for s in (p.get("status") or {}).get("containerStatuses") or []
                ),
            )
            for n, p in pods.items()
        },
        statefulsets={
            n: (
                s["metadata"]["uid"],
                s["status"].get("currentRevision", ""),
                s["status"].get("updateRevision", ""),
            )
            for n, s in sts.items()
        },
        services={n: s["metadata"]["uid"] for n, s in services.items()},
        lws_revisions={
            n: (r["metadata"]["uid"], labels_of(r)[c.REVISION_KEY]) for n, r in ours.items()
        },
        sts_revisions={n: r["metadata"]["uid"] for n, r in all_revisions.items() if n not in ours},
    )


def revision_keys(snap: Snapshot) -> set[str]:
    return {key for _, key in snap.lws_revisions.values()}


# ---- waits -----------------------------------------------------------------------------------
def key_of(obj: dict[str, Any]) -> str | None:
    return labels_of(obj).get(c.REVISION_KEY)


def owned_by_lws(obj: dict[str, Any]) -> bool:
    refs = obj["metadata"].get("ownerReferences") or []
    return all(ref.get("kind") == c.KIND for ref in refs)


def log_tail(path: Path, lines: int = 80) -> str:
    """The last lines of a log, without kopf's line per handled event."""
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join([ln for ln in text if "kopf.objects: Handler" not in ln][-lines:])


def frozen_mid_rollout(pods: Objects, old_key: str) -> bool:
    """b (3 groups of 2): groups 0 and 1 old and Ready; group 2's leader new and Pending, its
    worker new and Ready."""
    want = ["b-0", "b-0-1", "b-1", "b-1-1", "b-2", "b-2-1"]
    by_name = {k.split("/", 1)[1]: p for k, p in pods.items()}
    if sorted(by_name) != want or any(
        p["metadata"].get("deletionTimestamp") for p in pods.values()
    ):
        return False
    new_key = key_of(by_name["b-2"])
    return (
        all(pod_ready(by_name[n]) and key_of(by_name[n]) == old_key for n in want[:4])
        and new_key not in (None, old_key)
        and by_name["b-2"].get("status", {}).get("phase") == "Pending"
        and key_of(by_name["b-2-1"]) == new_key
        and pod_ready(by_name["b-2-1"])
    )


def rolling(lws: dict[str, Any], *, updated: int, ready: int) -> bool:
    status = lws.get("status") or {}
    return (
        status.get("observedGeneration") == lws["metadata"]["generation"]
        and (condition(lws, c.CONDITION_UPDATE_IN_PROGRESS) or {}).get("status") == "True"
        and (condition(lws, c.CONDITION_AVAILABLE) or {}).get("status") != "True"
        and status.get("updatedReplicas", 0) == updated
        and status.get("readyReplicas", 0) == ready
    )


async def reconciled_after(kube: Kube, name: str, value: str) -> None:
    """Annotate the LWS and wait until our operator has copied the annotation onto its leader
    StatefulSet: a reconcile that read the LWS after the change has run (nothing else copies
    it; upstream is stopped)."""
    await kube.patch(lws_path(NS, name), {"metadata": {"annotations": {PROBE: value}}})
    await wait_for_objects(
        kube,
        resource_path("apps/v1", "statefulsets", namespace=NS),
        lambda objs: (
            (objs.get(f"{NS}/{name}", {}).get("metadata", {}).get("annotations") or {}).get(PROBE)
            == value
        ),
        timeout=TIMEOUT,
        what=f"our operator to reconcile {name} (annotation {PROBE}={value} on its StatefulSet)",
        field_selector=f"metadata.name={name}",
    )


async def statefulsets_settled(kube: Kube, name: str) -> None:
    """Every StatefulSet of ``name`` observed by the StatefulSet controller at its current
    generation: a template change would by then show as a new updateRevision."""
    await wait_for_objects(
        kube,
        resource_path("apps/v1", "statefulsets", namespace=NS),
        lambda objs: (
            bool(objs)
            and all(
                (s.get("status") or {}).get("observedGeneration") == s["metadata"]["generation"]
                for s in objs.values()
            )
        ),
        timeout=TIMEOUT,
        what=f"the StatefulSets of {name} observed at their generation",
        label_selector=f"{c.SET_NAME_LABEL}={name}",
    )


# ---- set-up steps ------------------------------------------------------------------------------
def rolling_body() -> dict[str, Any]:
    """b: 3 groups of 2, maxUnavailable 1, restartPolicy None. Not the default
    RecreateGroupOnPodRestart: with it, upstream v0.9.0 sometimes recreates the group it has
    just replaced, after it looked settled ("Worker pod b-2-1 failed, deleted leader pod b-2 to
    recreate group 2", seen in 2 of 12 runs: it takes a worker pod of the old group, deleted
    with it, for a failure), so no state of the rollout would be final. a and c keep the
    default policy."""
    body = lws_body("b", replicas=3, size=2, rolloutStrategy=ROLLING)
    body["spec"]["leaderWorkerTemplate"]["restartPolicy"] = "None"
    return body


async def upstream_phase(kube: Kube, manager: upstream.UpstreamManager) -> tuple[str, Objects]:
    """Create a, b and c under upstream and freeze b mid-rollout; returns b's original key and
    its pods at the freeze."""
    bodies = [
        lws_body("a", replicas=2, size=3),
        rolling_body(),
        lws_body("c", replicas=2, size=2, subdomain="UniquePerReplica"),
    ]
    for body in bodies:
        await kube.create(lws_path(NS), body)
    for body in bodies:
        want = body["spec"]["replicas"]
        await wait_lws(
            kube,
            NS,
            body["metadata"]["name"],
            lambda o, w=want: is_available(o, w),
            "Available under upstream",
        )
    (b_key,) = revision_keys(await snapshot(kube, "b"))

    # b's new leader template cannot be scheduled: upstream replaces group 2 and stops there.
    leader_spec = {"containers": [container("leader")], "nodeSelector": NOWHERE}
    patch = {"spec": {"leaderWorkerTemplate": {"leaderTemplate": {"spec": leader_spec}}}}
    await kube.patch(lws_path(NS, "b"), patch)
    frozen = await wait_pods(
        kube,
        NS,
        "b",
        lambda pods: frozen_mid_rollout(pods, b_key),
        "group 2 replaced, its leader Pending",
    )
    await wait_lws(
        kube, NS, "b", lambda o: rolling(o, updated=1, ready=2), "rolling, 1 updated, 2 ready"
    )
    await wait_for_objects(
        kube,
        resource_path("v1", "services", namespace=NS),
        lambda objs: {f"{NS}/c-0", f"{NS}/c-1"} <= set(objs),
        timeout=TIMEOUT,
        what="c's per-replica Services",
        label_selector=f"{c.SET_NAME_LABEL}=c",
    )
    manager.check_alive()
    return b_key, frozen


# ---- the test ----------------------------------------------------------------------------------
async def test_taking_over_from_upstream_restarts_nothing(
    cluster: LocalCluster, upstream_bins: Path, tmp_path: Path
) -> None:
    async with await Kube.connect(cluster.kubeconfig(), user_agent="lws-adoption-test") as kube:
        assert kube.host == cluster.server
        await create_namespace(kube, NS)
        manager = await upstream.start_upstream(
            kube,
            cluster.kubeconfig("lws-upstream"),
            tmp_path / "upstream",
            bins=upstream_bins,
            crd_field_manager=CRD_MANAGER,
        )
        try:
            b_key, frozen = await upstream_phase(kube, manager)
        except BaseException:
            print(f"upstream manager log ({manager.log}):\n{log_tail(manager.log)}")
            raise
        finally:
            await manager.stop()
        assert (
            await kube.get_or_none(
                resource_path(
                    ADMISSION,
                    "validatingwebhookconfigurations",
                    name=upstream.VALIDATING_CONFIGURATION,
                )
            )
            is None
        )
        before = {name: await snapshot(kube, name) for name in NAMES}
        # Nothing moved between the freeze and upstream's exit (else the comparison below
        # would blame our operator for upstream's doing).
        frozen_uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in frozen.values()}
        at_exit = {n: uid for n, (uid, _) in before["b"].pods.items()}
        assert at_exit == frozen_uids, "upstream itself changed b's pods after the freeze"

        # Our CRD (replacing upstream's: same field manager, force) and admission policies,
        # probed only once our operator runs: upstream's LWS defaulting webhook, left in place
        # until our operator replaces its configuration, refuses every LWS request meanwhile.
        await install_lws_api(kube, CRD_MANAGER, wait=False)
        op = await start_operator(kube, cluster.kubeconfig("lws-operator"), tmp_path / "op.log")
        try:
            await wait_lws_api(kube)
            await after_takeover(kube, before, b_key)
            op.check_alive()
        except BaseException:
            print(f"operator log ({op.log}):\n{log_tail(op.log)}")
            raise
        finally:
            await op.stop()


async def after_takeover(kube: Kube, before: dict[str, Snapshot], b_key: str) -> None:
    # Two reconciles of each LWS that started after our operator did; passes of one LWS never
    # overlap, so the first of them has run to its end (status and history included).
    for name in NAMES:
        for value in ("1", "2"):
            await reconciled_after(kube, name, value)
        await statefulsets_settled(kube, name)
    for name in ("a", "c"):
        await wait_lws(kube, NS, name, lambda o: is_available(o, 2), "still Available")
    await wait_lws(kube, NS, "b", lambda o: rolling(o, updated=1, ready=2), "still rolling")

    after = {name: await snapshot(kube, name) for name in NAMES}
    for name in NAMES:
        old, new = before[name], after[name]
        assert new.pods == old.pods, f"{name}: pods replaced or restarted"
        assert new.statefulsets == old.statefulsets, f"{name}: StatefulSets replaced or changed"
        assert new.services == old.services, f"{name}: Services replaced"
        assert new.lws_revisions == old.lws_revisions, f"{name}: LWS revisions changed"
        assert new.sts_revisions == old.sts_revisions, f"{name}: a new pod template"
    assert len(before["a"].pods) == 6 and len(before["c"].pods) == 4
    assert len(before["b"].pods) == 6 and len(revision_keys(before["b"])) == 2
    assert sum(len(s.pods) for s in before.values()) == 16

    # Later changes proceed as usual: a scale-up ...
    await kube.patch(lws_path(NS, "a"), {"spec": {"replicas": 3}})
    await wait_lws(kube, NS, "a", lambda o: is_available(o, 3), "Available with 3 groups")
    a = await snapshot(kube, "a")
    assert {n: a.pods[n] for n in before["a"].pods} == before["a"].pods
    assert len(a.pods) == 9 and a.lws_revisions == before["a"].lws_revisions

    # ... b back to its first template (the impossible nodeSelector gone): upstream's first
    # revision matches again, so only group 2 is replaced; groups 0 and 1 already run it ...
    patch = {"spec": {"leaderWorkerTemplate": {"leaderTemplate": {"spec": {"nodeSelector": None}}}}}
    await kube.patch(lws_path(NS, "b"), patch)
    b = await rolled_out(kube)
    assert revision_keys(b) == {b_key}
    assert {n: b.pods[n] for n in ("b-0", "b-0-1", "b-1", "b-1-1")} == {
        n: before["b"].pods[n] for n in ("b-0", "b-0-1", "b-1", "b-1-1")
    }
    assert all(b.pods[n][0] != before["b"].pods[n][0] for n in ("b-2", "b-2-1"))

    # ... and a new template rolls over every group.
    labels = {"role": "leader", "generation": "3"}
    relabel = {
        "spec": {"leaderWorkerTemplate": {"leaderTemplate": {"metadata": {"labels": labels}}}}
    }
    await kube.patch(lws_path(NS, "b"), relabel)
    final = await rolled_out(kube)
    (final_key,) = revision_keys(final)
    assert final_key not in revision_keys(before["b"])
    pods = await list_of(kube, "v1", "pods", NS, "b")
    assert all(labels_of(pods[f"b-{g}"]).get("generation") == "3" for g in range(3))
    assert all(uid != b.pods[n][0] for n, (uid, _) in final.pods.items())


async def rolled_out(kube: Kube) -> Snapshot:
    """Wait until b's rollout is complete (Available, 3 groups updated, history truncated to
    one revision) and check that every StatefulSet and pod runs that revision."""
    await wait_lws(
        kube,
        NS,
        "b",
        lambda o: is_available(o, 3) and o["status"].get("updatedReplicas") == 3,
        "rolled out: Available, 3 groups updated",
        timeout=120,
    )
    await wait_for_objects(
        kube,
        resource_path("apps/v1", "controllerrevisions", namespace=NS),
        lambda objs: len({key_of(r) for r in objs.values() if owned_by_lws(r)}) == 1,
        timeout=TIMEOUT,
        what="b's revision history truncated to one revision",
        label_selector=f"{c.SET_NAME_LABEL}=b",
    )
    snap = await snapshot(kube, "b")
    (key,) = revision_keys(snap)
    sts = await list_of(kube, "apps/v1", "statefulsets", NS, "b")
    pods = await list_of(kube, "v1", "pods", NS, "b")
    assert sorted(sts) == ["b", "b-0", "b-1", "b-2"]
    assert sorted(pods) == sorted(f"b-{g}{w}" for g in range(3) for w in ("", "-1"))
    assert {key_of(o) for o in [*sts.values(), *pods.values()]} == {key}
    return snap
