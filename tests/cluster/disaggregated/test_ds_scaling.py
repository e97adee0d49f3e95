"""External roles on the real cluster: the role scaler is created (owned by the set, seeded
with 1), ``/scale`` answers at once, writing it scales the role's LeaderWorkerSet, a real
HorizontalPodAutoscaler (kube-controller-manager's) drives it through ``/scale``, and the
scaler goes with the set. Upstream's ``hpa_test.go`` :53, :91, :116.

The local cluster serves no metrics API: the HPA here acts on its replica bounds (which it
applies before reading any metric, through the same ``/scale`` calls), and metric-driven
scaling is not exercised (docs/disaggregatedset.md says so)."""

from __future__ import annotations

from typing import Any

from lws_operator.api import constants as lc
from lws_operator.api import ds_constants as c
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_operator.plan.ds.revision import compute_revision
from lws_testbed.wait import wait_for_objects
from tests.cluster.disaggregated.helpers import (
    ds_body,
    ds_path,
    role,
    scaler_path,
    set_scale,
    settled,
    wait_children,
)

HPA = "autoscaling/v2"


async def wait_scaler(
    kube: Kube, ns: str, name: str, done: Any, what: str, timeout: float = 90
) -> dict[str, Any]:
    objs = await wait_for_objects(
        kube,
        scaler_path(ns),
        lambda objs: f"{ns}/{name}" in objs and done(objs[f"{ns}/{name}"]),
        timeout=timeout,
        what=f"scaler {name}: {what}",
    )
    return objs[f"{ns}/{name}"]


async def test_an_external_role_follows_its_scaler(kube: Kube, lws_namespace: str) -> None:
    ns = lws_namespace
    created = await kube.create(
        ds_path(ns), ds_body("pd", role("prefill", 1, external=True), role("decode", 2))
    )
    rev = compute_revision(created["spec"]["roles"])
    prefill, decode = f"pd-0-{rev}-prefill", f"pd-0-{rev}-decode"
    scaler = await wait_scaler(
        kube,
        ns,
        "pd-prefill",
        lambda s: (s.get("status") or {}).get("replicas") == 1,
        "created, status 1 group",
    )
    (owner,) = scaler["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["blockOwnerDeletion"]) == (
        c.KIND,
        created["metadata"]["uid"],
        True,
    )
    assert scaler["spec"]["replicas"] == 1
    assert scaler["status"]["selector"] == (
        f"{c.SET_NAME_LABEL}=pd,{c.ROLE_LABEL}=prefill,{lc.WORKER_INDEX_LABEL}=0"
    )
    scale = await kube.get(scaler_path(ns, "pd-prefill", "scale"))
    assert (
        scale["spec"]["replicas"] == 1
        and scale["status"]["selector"] == scaler["status"]["selector"]
    )
    await wait_children(kube, ns, "pd", lambda o: settled(o, {prefill: 1, decode: 2}), "ready")

    # /scale to 3: the prefill LWS follows (no rollout), the scaler reports 3 groups.
    await set_scale(kube, ns, "pd-prefill", 3)
    await wait_children(kube, ns, "pd", lambda o: settled(o, {prefill: 3, decode: 2}), "prefill 3")
    await wait_scaler(
        kube, ns, "pd-prefill", lambda s: s["status"].get("replicas") == 3, "status 3 groups"
    )
    # The selector picks the leaders: one pod per group.
    pods = await kube.list(
        resource_path("v1", "pods", namespace=ns), label_selector=scaler["status"]["selector"]
    )
    assert len(pods["items"]) == 3

    # A real HPA: kube-controller-manager's, bounded 4..5, writes /scale itself.
    hpa = {
        "apiVersion": HPA,
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "prefill"},
        "spec": {
            "scaleTargetRef": {
                "apiVersion": c.API_VERSION,
                "kind": c.SCALER_KIND,
                "name": "pd-prefill",
            },
            "minReplicas": 4,
            "maxReplicas": 5,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 50},
                    },
                }
            ],
        },
    }
    await kube.create(resource_path(HPA, "horizontalpodautoscalers", namespace=ns), hpa)
    await wait_children(
        kube, ns, "pd", lambda o: settled(o, {prefill: 4, decode: 2}), "the HPA's minimum", 120
    )
    await kube.delete(resource_path(HPA, "horizontalpodautoscalers", namespace=ns, name="prefill"))

    # Back to Static: the scaler is deleted, the role keeps its spec.replicas.
    ds = await kube.get(ds_path(ns, "pd"))
    await kube.patch(
        ds_path(ns, "pd"),
        [
            {"op": "remove", "path": "/spec/roles/0/scaling"},
            {"op": "replace", "path": "/spec/roles/0/spec/replicas", "value": 2},
        ],
        kind="json",
    )
    assert ds["spec"]["roles"][0]["name"] == "prefill"
    await wait_for_objects(
        kube,
        scaler_path(ns),
        lambda objs: not objs,
        timeout=60,
        what="the scaler deleted once the role is Static",
    )
    await wait_children(kube, ns, "pd", lambda o: settled(o, {prefill: 2, decode: 2}), "Static 2")

    # External again, then the set deleted: the garbage collector takes the scaler too.
    await kube.patch(
        ds_path(ns, "pd"),
        [{"op": "add", "path": "/spec/roles/0/scaling", "value": {"mode": "External"}}],
        kind="json",
    )
    seeded = await wait_scaler(kube, ns, "pd-prefill", lambda s: True, "created again")
    assert seeded["spec"]["replicas"] == 2  # seeded with the running groups: nothing drains
    await kube.delete(ds_path(ns, "pd"), propagation="Background")
    await wait_for_objects(
        kube, scaler_path(ns), lambda objs: not objs, timeout=90, what="the scaler collected"
    )
    await wait_children(kube, ns, "pd", lambda o: not o, "gone")
