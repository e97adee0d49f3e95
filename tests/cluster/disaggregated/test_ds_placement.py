"""Slices and placement on the real scheduler, with examples/disaggregatedset-prefill-
decode.yaml (2 slices, ExclusiveSlice on topology.kubernetes.io/zone): each slice's roles
land in one zone and the two slices in different zones; another set with ExclusiveTopology
then finds no free zone and stays unscheduled. Upstream's e2e
``e2e_test.go`` :535, KEP-846 and KEP-848."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from lws_operator.api import ds_constants as c
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_operator.plan.meta import labels_of, pod_ready
from lws_testbed.nodes import ZONE_LABEL
from lws_testbed.wait import Objects, wait_for_objects
from tests.cluster.controller.helpers import short_pods
from tests.cluster.disaggregated.helpers import available, ds_body, ds_path, role, wait_ds

EXAMPLE = Path(__file__).parents[3] / "examples" / "disaggregatedset-prefill-decode.yaml"


async def pods_of(
    kube: Kube, ns: str, name: str, done: Any, what: str, timeout: float = 120
) -> Objects:
    return await wait_for_objects(
        kube,
        resource_path("v1", "pods", namespace=ns),
        done,
        timeout=timeout,
        what=f"pods of {name}: {what}",
        label_selector=f"{c.SET_NAME_LABEL}={name}",
        summary=short_pods,
    )


def unschedulable(pod: dict[str, Any]) -> bool:
    return any(
        cond.get("type") == "PodScheduled" and cond.get("reason") == "Unschedulable"
        for cond in (pod.get("status") or {}).get("conditions") or []
    )


async def test_slices_in_their_own_zones(kube: Kube, lws_namespace: str) -> None:
    ns = lws_namespace
    body = yaml.safe_load(EXAMPLE.read_text())
    await kube.create(ds_path(ns), body)
    # per slice: 2 prefill pods, 1 decode group of 2 pods
    pods = await pods_of(
        kube,
        ns,
        "llama-pd",
        lambda objs: len(objs) == 8 and all(pod_ready(p) for p in objs.values()),
        "8 Ready",
    )
    nodes = (await kube.list(resource_path("v1", "nodes")))["items"]
    # (Only the kwok nodes have zones; a real node, when there is one, is tainted.)
    zone_of = {n["metadata"]["name"]: labels_of(n).get(ZONE_LABEL) for n in nodes}
    zones: dict[str, set[str]] = {}
    for pod in pods.values():
        zones.setdefault(labels_of(pod)[c.SLICE_LABEL], set()).add(zone_of[pod["spec"]["nodeName"]])
    assert sorted(zones) == ["0", "1"]
    assert all(len(z) == 1 for z in zones.values()), zones  # a slice's roles in one zone
    assert zones["0"] != zones["1"], zones  # the slices apart
    await wait_ds(kube, ns, "llama-pd", available, "Available")

    # ExclusiveTopology: no zone is free of another set's slice.
    other = ds_body(
        "other",
        role("a", 1),
        role("b", 1),
        placementPolicy={"type": "ExclusiveTopology", "topology": ZONE_LABEL},
    )
    await kube.create(ds_path(ns), other)
    await pods_of(
        kube,
        ns,
        "other",
        lambda objs: len(objs) == 2 and all(unschedulable(p) for p in objs.values()),
        "both Unschedulable",
    )
    # (Deleting llama-pd frees the zones, but the scheduler retries pods left unschedulable by
    # anti-affinity only on its periodic flush, up to 5 minutes later: not waited for here.)
