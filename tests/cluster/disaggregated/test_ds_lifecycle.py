"""A DisaggregatedSet on the real cluster: created (one LeaderWorkerSet per role, their pods,
the private Services once every role has a ready group, status), a Static role scaled
without a rollout, and deleted (the garbage collector takes its children). Upstream's e2e
cases ``e2e_test.go`` :150, :275, :311, :375, :468, :562."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from lws_operator.api import ds_constants as c
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_operator.plan.ds.revision import compute_revision
from lws_operator.plan.meta import labels_of, pod_ready
from lws_testbed.wait import wait_for_objects
from tests.cluster.deploy.helpers import kubectl_lws
from tests.cluster.disaggregated.helpers import (
    available,
    ds_body,
    ds_path,
    role,
    settled,
    wait_children,
    wait_ds,
)


async def test_create_scale_and_delete(
    kube: Kube, lws_namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    ns = lws_namespace
    prefill = role("prefill", 2, size=2, metadata={"labels": {"kueue.x-k8s.io/queue-name": "q"}})
    prefill["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"] = {
        "labels": {"team": "inference"},
        "annotations": {"note": "kept"},
    }
    body = ds_body("pd", prefill, role("decode", 1))
    created = await kube.create(ds_path(ns), body)
    rev = compute_revision(created["spec"]["roles"])
    want = {f"pd-0-{rev}-prefill": 2, f"pd-0-{rev}-decode": 1}
    children = await wait_children(kube, ns, "pd", lambda o: settled(o, want), "created, ready")
    lws = {o["metadata"]["name"]: o for o in children.values()}
    child = lws[f"pd-0-{rev}-prefill"]
    system = {
        "app": "pd-0-prefill",
        c.ROLE_LABEL: "prefill",
        c.SLICE_LABEL: "0",
        c.SET_NAME_LABEL: "pd",
        c.REVISION_LABEL: rev,
    }
    assert labels_of(child) == {"kueue.x-k8s.io/queue-name": "q", **system}
    (owner,) = child["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == (c.KIND, "pd", True)
    assert owner["uid"] == created["metadata"]["uid"]
    # Pods carry the set's labels (the Services select on them) and the role's own.
    pods = await wait_for_objects(
        kube,
        resource_path("v1", "pods", namespace=ns),
        lambda objs: len(objs) == 5 and all(pod_ready(p) for p in objs.values()),
        timeout=90,
        what="5 pods of pd Ready",
        label_selector=f"{c.SET_NAME_LABEL}=pd",
    )
    for pod in pods.values():
        labels = labels_of(pod)
        assert labels[c.REVISION_LABEL] == rev and labels[c.SLICE_LABEL] == "0"
        if labels[c.ROLE_LABEL] == "prefill":
            assert labels["team"] == "inference"
            assert pod["metadata"]["annotations"]["note"] == "kept"
    services = await wait_for_objects(
        kube,
        resource_path("v1", "services", namespace=ns),
        lambda objs: {f"{ns}/{n}-prv" for n in want} <= set(objs),
        timeout=60,
        what="the private Services",
        label_selector=f"{c.SET_NAME_LABEL}=pd",
    )
    for name in want:
        svc = services[f"{ns}/{name}-prv"]
        assert svc["spec"]["clusterIP"] == "None" and not svc["spec"].get("ports")
        assert labels_of(svc) == {k: v for k, v in labels_of(lws[name]).items() if k in (
            c.SET_NAME_LABEL, c.ROLE_LABEL, c.REVISION_LABEL, c.SLICE_LABEL
        )}  # fmt: skip
        assert svc["spec"]["selector"] == labels_of(svc)
    # Their EndpointSlices hold every Ready pod of the child (headless: by pod IP).
    await wait_for_objects(
        kube,
        resource_path("discovery.k8s.io/v1", "endpointslices", namespace=ns),
        lambda objs: _ready_endpoints(objs, f"pd-0-{rev}-prefill-prv") == 4,
        timeout=60,
        what="the prefill Service's EndpointSlice with its 4 Ready pods",
    )
    ds = await wait_ds(kube, ns, "pd", available, "Available")
    assert ds["status"]["roleStatuses"] == [
        {"name": "prefill", "replicas": 2, "readyReplicas": 2, "updatedReplicas": 2},
        {"name": "decode", "replicas": 1, "readyReplicas": 1, "updatedReplicas": 1},
    ]
    uids = {n: o["metadata"]["uid"] for n, o in lws.items()}

    # kubectl lws: the set's children and their groups; a change's rollout steps.
    out = await kubectl_lws("--kubeconfig", str(kubeconfig), "status", "pd", "-n", ns)
    assert out.startswith(f"{ns}/pd: revision {rev}, 1 slice, Available"), out
    assert f"pd-0-{rev}-prefill-prv" in out and f"\npd-0-{rev}-decode:\n" in out, out
    new = copy.deepcopy(body)
    new["spec"]["roles"][1]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][
        0
    ]["image"] = "registry.k8s.io/pause:3.9"
    (tmp_path / "new.yaml").write_text(yaml.safe_dump(new))
    plan = await kubectl_lws(
        "--kubeconfig", str(kubeconfig), "plan", "pd", "-f", str(tmp_path / "new.yaml"), "-n", ns
    )
    assert plan.startswith(f"{ns}/pd: revision {rev} -> "), plan
    assert "slice 0: 4 steps" in plan, plan

    # A Static role scaled 1 -> 3 -> 1: the same LeaderWorkerSets, no rollout.
    for n in (3, 1):
        await _set_replicas(kube, ns, "decode", n)
        target = {**want, f"pd-0-{rev}-decode": n}
        scaled = await wait_children(
            kube, ns, "pd", lambda o, t=target: settled(o, t), f"decode at {n}"
        )
        assert {o["metadata"]["name"]: o["metadata"]["uid"] for o in scaled.values()} == uids
    await wait_ds(
        kube,
        ns,
        "pd",
        lambda d: available(d) and _role(d, "decode")["readyReplicas"] == 1,
        "back at 1",
    )

    # Deleted: the garbage collector removes the LeaderWorkerSets, Services and pods.
    await kube.delete(ds_path(ns, "pd"), propagation="Background")
    await wait_children(kube, ns, "pd", lambda o: not o, "gone")
    for api, plural in (("v1", "pods"), ("v1", "services")):
        await wait_for_objects(
            kube,
            resource_path(api, plural, namespace=ns),
            lambda objs: not objs,
            timeout=90,
            what=f"the {plural} of pd gone",
            label_selector=f"{c.SET_NAME_LABEL}=pd",
        )


async def _set_replicas(kube: Kube, ns: str, role_name: str, n: int) -> None:
    """Set one role's replicas (a JSON patch by index: roles is a list)."""
    ds = await kube.get(ds_path(ns, "pd"))
    index = next(i for i, r in enumerate(ds["spec"]["roles"]) if r["name"] == role_name)
    await kube.patch(
        ds_path(ns, "pd"),
        [{"op": "replace", "path": f"/spec/roles/{index}/spec/replicas", "value": n}],
        kind="json",
    )


def _role(ds: dict[str, Any], name: str) -> dict[str, Any]:
    return next(r for r in ds["status"]["roleStatuses"] if r["name"] == name)


def _ready_endpoints(objs: dict[str, dict[str, Any]], service: str) -> int:
    return sum(
        1
        for s in objs.values()
        if labels_of(s).get("kubernetes.io/service-name") == service
        for e in s.get("endpoints") or []
        if (e.get("conditions") or {}).get("ready")
    )
