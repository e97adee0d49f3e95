"""Subgroup labels on real pods (upstream's getSubGroupIndex, pkg/webhooks/pod_webhook.go): sizes 4,
5 and 9 with subgroup sizes 1, 2 and 4, under ``LeaderWorker`` and ``LeaderExcluded`` (where the API
allows it: ``LeaderExcluded`` needs ``size - 1`` divisible by the subgroup size, so 4/2 and 4/4 do
not exist).

The expected layouts are written out by hand from upstream's rule, not computed by the
code under test: ``-`` is a pod without subgroup labels (the leader under ``LeaderExcluded``).
"""

from __future__ import annotations

import hashlib

from lws_operator.api import constants as c
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_testbed.wait import Objects, wait_for_objects
from tests.cluster.controller.helpers import lws_body, lws_path, short_pods

# (policy, size, subgroup size) -> subgroup index of worker index 0 (the leader), 1, 2, ...
LAYOUTS = {
    ("LeaderWorker", 4, 1): "0 1 2 3",
    ("LeaderWorker", 4, 2): "0 0 1 1",
    ("LeaderWorker", 4, 4): "0 0 0 0",
    ("LeaderWorker", 5, 1): "0 1 2 3 4",
    ("LeaderWorker", 5, 2): "0 0 0 1 1",
    ("LeaderWorker", 5, 4): "0 0 0 0 0",
    ("LeaderWorker", 9, 1): "0 1 2 3 4 5 6 7 8",
    ("LeaderWorker", 9, 2): "0 0 0 1 1 2 2 3 3",
    ("LeaderWorker", 9, 4): "0 0 0 0 0 1 1 1 1",
    ("LeaderExcluded", 4, 1): "- 1 2 3",
    ("LeaderExcluded", 5, 1): "- 1 2 3 4",
    ("LeaderExcluded", 5, 2): "- 0 0 1 1",
    ("LeaderExcluded", 5, 4): "- 0 0 0 0",
    ("LeaderExcluded", 9, 1): "- 1 2 3 4 5 6 7 8",
    ("LeaderExcluded", 9, 2): "- 0 0 1 1 2 2 3 3",
    ("LeaderExcluded", 9, 4): "- 0 0 0 0 1 1 1 1",
}


def lws_name(policy: str, size: int, sg: int) -> str:
    return f"{'lw' if policy == 'LeaderWorker' else 'le'}-{size}-{sg}"


async def test_subgroup_labels_for_every_size_and_policy(kube: Kube, lws_namespace: str) -> None:
    ns = lws_namespace
    for (policy, size, sg), _ in LAYOUTS.items():
        body = lws_body(lws_name(policy, size, sg), replicas=1, size=size)
        body["spec"]["leaderWorkerTemplate"]["subGroupPolicy"] = {
            "subGroupPolicyType": policy,
            "subGroupSize": sg,
        }
        await kube.create(lws_path(ns), body)
    total = sum(size for _, size, _ in LAYOUTS)

    def all_created(pods: Objects) -> bool:
        return len(pods) == total

    pods = await wait_for_objects(
        kube,
        resource_path("v1", "pods", namespace=ns),
        all_created,
        timeout=120,
        what=f"all {total} pods created",
        label_selector=c.SET_NAME_LABEL,  # every LWS pod, of all sixteen
        summary=short_pods,
    )
    by_name = {p["metadata"]["name"]: p for p in pods.values()}
    wrong = []
    for (policy, size, sg), layout in LAYOUTS.items():
        leader = f"{lws_name(policy, size, sg)}-0"
        seen = []
        for worker, want in enumerate(layout.split()):
            pod = by_name[leader if worker == 0 else f"{leader}-{worker}"]
            labels = pod["metadata"]["labels"]
            index = labels.get(c.SUBGROUP_INDEX_LABEL, "-")
            seen.append(index)
            key = labels.get(c.SUBGROUP_UNIQUE_HASH_LABEL)
            want_key = None if want == "-" else sha1(f"{leader}/{want}")
            annotations = pod["metadata"]["annotations"]
            if key != want_key or annotations.get(c.SUBGROUP_SIZE_ANNOTATION) != str(sg):
                wrong.append(f"{pod['metadata']['name']}: key {key}, annotations {annotations}")
            if annotations.get(c.SUBGROUP_POLICY_TYPE_ANNOTATION) != policy:
                wrong.append(f"{pod['metadata']['name']}: policy annotation {annotations}")
        if " ".join(seen) != layout:
            wrong.append(f"{policy} size {size} subgroups of {sg}: {' '.join(seen)} != {layout}")
    assert not wrong, "\n".join(wrong)


def sha1(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()
