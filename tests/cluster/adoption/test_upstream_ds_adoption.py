"""Taking over DisaggregatedSets that upstream created restarts no pod.

Upstream kubernetes-sigs/lws **v0.9.0** (the Go module proxy serves no v0.10.0 here) already
ships the DisaggregatedSet controller, without slices, placement or role scalers: it names its
children ``<set>-<revision>-<role>`` with no slice label, and their Services
``<child>-prv``. It runs first, with its own CRDs, and makes two sets: ``pd`` at rest, and
``mid`` frozen in the middle of a rollout (its new template asks for a node that does not
exist, so the new revision's first groups stay Pending and upstream waits). Then it is
stopped, our CRDs replace its, and our operator starts. Every pod, LeaderWorkerSet,
StatefulSet and Service must be the same object afterwards, with the same replicas and
restart counts (the revision hash is upstream's, so the children are recognised); and later
changes must proceed as usual: a Static role scaled, ``pd`` rolled out to slice-aware
children, ``mid`` taken back to its first template, which drains only the stuck revision.

Upstream and our operator must never run against one control plane at the same time, so this
module starts a local cluster of its own.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lws_operator.api import constants as lc
from lws_operator.api import ds_constants as c
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_operator.plan.ds.objects import legacy_lws_name, lws_name
from lws_operator.plan.ds.revision import compute_revision
from lws_operator.plan.meta import labels_of, pod_ready
from lws_testbed import upstream
from lws_testbed.local import ClusterConfig, LocalCluster
from lws_testbed.lws_api import install_lws_api
from lws_testbed.manifests import create_namespace
from lws_testbed.operator_process import start_operator
from lws_testbed.wait import Objects, wait_for_objects
from tests.cluster.adoption.test_upstream_adoption import CRD_MANAGER, log_tail, upstream_bins
from tests.cluster.conftest import install_ds_api
from tests.cluster.disaggregated.helpers import (
    ds_body,
    ds_path,
    role,
    settled,
    wait_children,
    wait_ds,
)

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("LWS_TEST_KUBECONFIG")),
    reason="runs the upstream controller against a local cluster of its own",
)

NS = "ds-adoption"
TIMEOUT = 120
NOWHERE = {"lws-adoption-test/nowhere": "true"}
__all__ = ["upstream_bins"]  # a fixture of the LWS adoption test, used here too


@pytest.fixture(scope="module")
def cluster(
    upstream_bins: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    own = LocalCluster(ClusterConfig(state_dir=tmp_path_factory.mktemp("ds-adoption-cluster")))
    own.start()
    try:
        yield own
    finally:
        own.stop()


@dataclass(frozen=True)
class Snapshot:
    pods: dict[str, tuple[str, tuple[int, ...]]]
    lws: dict[str, tuple[str, int, str]]
    statefulsets: dict[str, tuple[str, str, str]]
    services: dict[str, str]


async def _list(kube: Kube, api: str, plural: str, selector: str) -> dict[str, dict[str, Any]]:
    listing = await kube.list(resource_path(api, plural, namespace=NS), label_selector=selector)
    return {o["metadata"]["name"]: o for o in listing["items"]}


async def snapshot(kube: Kube, name: str) -> Snapshot:
    mine = f"{c.SET_NAME_LABEL}={name}"
    lws = await _list(kube, lc.API_VERSION, lc.PLURAL, mine)
    pods: dict[str, dict[str, Any]] = {}
    sts: dict[str, dict[str, Any]] = {}
    for child in lws:
        pods |= await _list(kube, "v1", "pods", f"{lc.SET_NAME_LABEL}={child}")
        sts |= await _list(kube, "apps/v1", "statefulsets", f"{lc.SET_NAME_LABEL}={child}")
    services = await _list(kube, "v1", "services", mine)
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
        lws={
            n: (o["metadata"]["uid"], int(o["spec"]["replicas"]), labels_of(o)[c.REVISION_LABEL])
            for n, o in lws.items()
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
    )


def pd_body() -> dict[str, Any]:
    return ds_body("pd", role("prefill", 2, size=2), role("decode", 1))


def mid_body() -> dict[str, Any]:
    return ds_body("mid", role("prefill", 2, surge=1, unavailable=0), role("decode", 2))


async def ready_services(kube: Kube, names: list[str]) -> None:
    await wait_for_objects(
        kube,
        resource_path("v1", "services", namespace=NS),
        lambda objs: {f"{NS}/{n}-prv" for n in names} <= set(objs),
        timeout=TIMEOUT,
        what=f"the Services of {names}",
    )


def frozen(objs: Objects, old: str) -> bool:
    """mid: old revision at 2+2 ready; the new revision at 1+1, its pods Pending."""
    by_rev: dict[str, dict[str, Any]] = {}
    for o in objs.values():
        by_rev.setdefault(labels_of(o)[c.REVISION_LABEL], {})[labels_of(o)[c.ROLE_LABEL]] = o
    new = [r for r in by_rev if r != old]
    if len(by_rev) != 2 or len(new) != 1:
        return False
    olds, news = by_rev[old], by_rev[new[0]]
    return (
        all(olds[r]["spec"]["replicas"] == 2 for r in ("prefill", "decode"))
        and all(news.get(r, {}).get("spec", {}).get("replicas") == 1 for r in ("prefill", "decode"))
        and all((news[r].get("status") or {}).get("replicas") == 1 for r in news)
    )


async def upstream_phase(kube: Kube, manager: upstream.UpstreamManager) -> tuple[str, str]:
    """pd at rest and mid frozen mid-rollout, under upstream; their first revisions."""
    pd = await kube.create(ds_path(NS), pd_body())
    mid = await kube.create(ds_path(NS), mid_body())
    pd_rev = compute_revision(pd["spec"]["roles"])
    mid_rev = compute_revision(mid["spec"]["roles"])
    pd_children = {
        legacy_lws_name("pd", pd_rev, "prefill"): 2,
        legacy_lws_name("pd", pd_rev, "decode"): 1,
    }
    mid_children = {legacy_lws_name("mid", mid_rev, r): 2 for r in ("prefill", "decode")}
    for name, want in (("pd", pd_children), ("mid", mid_children)):
        await wait_children(kube, NS, name, lambda o, w=want: settled(o, w), "upstream's, ready")
    await ready_services(kube, [*pd_children, *mid_children])
    # mid's new template cannot be scheduled: upstream creates the new revision, scales it
    # to 1+1 and waits for it to be ready, forever.
    roles = (await kube.get(ds_path(NS, "mid")))["spec"]["roles"]
    roles[0]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["nodeSelector"] = NOWHERE
    roles[1]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["nodeSelector"] = NOWHERE
    await kube.patch(ds_path(NS, "mid"), {"spec": {"roles": roles}})
    await wait_children(kube, NS, "mid", lambda o: frozen(o, mid_rev), "frozen mid-rollout")
    manager.check_alive()
    return pd_rev, mid_rev


async def install_our_api(kube: Kube) -> None:
    """Our CRDs (replacing upstream's: same field manager) and admission policies, as
    ``kubectl apply --server-side -f crds/`` installs them. The LWS API is not probed: upstream's
    LWS webhook configuration refuses LWS writes until our operator replaces it, and this test
    writes none itself (our operator retries its own)."""
    await install_lws_api(kube, CRD_MANAGER, wait=False)
    await install_ds_api(kube, CRD_MANAGER)


def ours(ds: dict[str, Any]) -> bool:
    """Our operator's status (upstream v0.9.0 writes none), for the current generation: a
    whole reconcile of ours has run (the status is its last write)."""
    status = ds.get("status") or {}
    return (
        bool(status.get("conditions"))
        and status.get("observedGeneration") == ds["metadata"]["generation"]
    )


async def test_taking_over_disaggregated_sets_restarts_nothing(
    cluster: LocalCluster, upstream_bins: Path, tmp_path: Path
) -> None:
    async with await Kube.connect(cluster.kubeconfig(), user_agent="ds-adoption-test") as kube:
        await create_namespace(kube, NS)
        manager = await upstream.start_upstream(
            kube,
            cluster.kubeconfig("lws-upstream"),
            tmp_path / "upstream",
            bins=upstream_bins,
            crd_field_manager=CRD_MANAGER,
        )
        try:
            pd_rev, mid_rev = await upstream_phase(kube, manager)
        except BaseException:
            print(f"upstream manager log ({manager.log}):\n{log_tail(manager.log)}")
            raise
        finally:
            await manager.stop()
        before = {name: await snapshot(kube, name) for name in ("pd", "mid")}
        assert len(before["pd"].pods) == 5 and len(before["mid"].lws) == 4

        await install_our_api(kube)
        op = await start_operator(kube, cluster.kubeconfig("lws-operator"), tmp_path / "op.log")
        try:
            await after_takeover(kube, before, pd_rev, mid_rev)
            op.check_alive()
        except BaseException:
            print(f"operator log ({op.log}):\n{log_tail(op.log)}")
            raise
        finally:
            await op.stop()


async def after_takeover(
    kube: Kube, before: dict[str, Snapshot], pd_rev: str, mid_rev: str
) -> None:
    pd = await wait_ds(kube, NS, "pd", ours, "reconciled by our operator")
    assert {r["name"]: r.get("readyReplicas") for r in pd["status"]["roleStatuses"]} == {
        "prefill": 2,
        "decode": 1,
    }
    mid = await wait_ds(kube, NS, "mid", ours, "reconciled by our operator")
    assert {x["type"]: x["status"] for x in mid["status"]["conditions"]}["Progressing"] == "True"
    after = {name: await snapshot(kube, name) for name in ("pd", "mid")}
    for name in ("pd", "mid"):
        old, new = before[name], after[name]
        assert new.pods == old.pods, f"{name}: pods replaced or restarted"
        assert new.lws == old.lws, f"{name}: LeaderWorkerSets replaced or rescaled"
        assert new.statefulsets == old.statefulsets, f"{name}: StatefulSets replaced or changed"
        assert new.services == old.services, f"{name}: Services replaced"

    # A Static role scaled: the same (legacy-named) children, one more decode group.
    await kube.patch(
        ds_path(NS, "pd"),
        [{"op": "replace", "path": "/spec/roles/1/spec/replicas", "value": 2}],
        kind="json",
    )
    legacy = {
        legacy_lws_name("pd", pd_rev, "prefill"): 2,
        legacy_lws_name("pd", pd_rev, "decode"): 2,
    }
    await wait_children(kube, NS, "pd", lambda o: settled(o, legacy), "decode scaled to 2")
    scaled = await snapshot(kube, "pd")
    assert {n: scaled.pods[n] for n in before["pd"].pods} == before["pd"].pods

    # mid back to its first template: its revision is upstream's first one again, which runs
    # at full size, so only the stuck revision is drained; no pod of the first one restarts.
    roles = (await kube.get(ds_path(NS, "mid")))["spec"]["roles"]
    for r in roles:
        r["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"].pop("nodeSelector")
    await kube.patch(ds_path(NS, "mid"), {"spec": {"roles": roles}})
    first = {legacy_lws_name("mid", mid_rev, r): 2 for r in ("prefill", "decode")}
    await wait_children(kube, NS, "mid", lambda o: settled(o, first), "only the first revision")
    back = await snapshot(kube, "mid")
    kept = {n: v for n, v in before["mid"].pods.items() if n in back.pods}
    assert kept and back.pods == kept, "mid: pods of the first revision restarted"

    # pd rolled out: slice-aware children replace the legacy ones, step by step.
    roles = (await kube.get(ds_path(NS, "pd")))["spec"]["roles"]
    for r in roles:
        r["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["image"] = (
            "registry.k8s.io/pause:3.9"
        )
    rolled = await kube.patch(ds_path(NS, "pd"), {"spec": {"roles": roles}})
    rev = compute_revision(rolled["spec"]["roles"])
    new = {lws_name("pd", 0, rev, "prefill"): 2, lws_name("pd", 0, rev, "decode"): 2}
    await wait_children(kube, NS, "pd", lambda o: settled(o, new), "rolled out", timeout=180)
    await wait_for_objects(
        kube,
        resource_path("v1", "services", namespace=NS),
        lambda objs: {o["metadata"]["name"] for o in objs.values()} == {f"{n}-prv" for n in new},
        timeout=TIMEOUT,
        what="pd's Services: the new children's only",
        label_selector=f"{c.SET_NAME_LABEL}=pd",
    )
    # The old children's pods leave through the garbage collector, after their LWS is gone.
    pods = await wait_for_objects(
        kube,
        resource_path("v1", "pods", namespace=NS),
        lambda objs: len(objs) == 6 and all(pod_ready(p) for p in objs.values()),
        timeout=TIMEOUT,
        what="pd's pods: the new children's 6, Ready",
        label_selector=f"{c.SET_NAME_LABEL}=pd",
    )
    assert all(labels_of(p)[c.SLICE_LABEL] == "0" for p in pods.values())
