"""The leader StatefulSet follows the LWS's labels and annotations, removals included, at once
(issue 12.3): upstream applies it on every reconcile, so a removed annotation goes; the operator
applies it only when an apply would change something, judged from what its field manager owns.
A later, unrelated change (a scale-up) then rolls nothing."""

from __future__ import annotations

from typing import Any

from lws_operator.api import constants as c
from lws_operator.kube.client import Kube
from lws_operator.kube.paths import resource_path
from lws_testbed.wait import wait_for_objects
from tests.cluster.controller.helpers import (
    create_available,
    is_available,
    lws_body,
    lws_path,
    wait_lws,
)


def leader_sts_path(ns: str, name: str | None = None) -> str:
    return resource_path("apps/v1", "statefulsets", namespace=ns, name=name)


async def wait_leader_sts(kube: Kube, ns: str, name: str, done: Any, what: str) -> dict[str, Any]:
    objs = await wait_for_objects(
        kube,
        leader_sts_path(ns),
        lambda objs: f"{ns}/{name}" in objs and done(objs[f"{ns}/{name}"]),
        timeout=60,
        what=f"leader StatefulSet {name}: {what}",
        field_selector=f"metadata.name={name}",
    )
    return objs[f"{ns}/{name}"]


def settled(sts: dict[str, Any]) -> bool:
    status = sts.get("status") or {}
    return (
        status.get("updateRevision") == status.get("currentRevision")
        and status.get("observedGeneration") == sts["metadata"].get("generation")
        and status.get("readyReplicas") == sts["spec"]["replicas"]
    )


async def test_removed_labels_and_annotations_reach_the_leader_statefulset_at_once(
    kube: Kube, lws_namespace: str
) -> None:
    ns, name = lws_namespace, "tidy"
    body = lws_body(
        name,
        replicas=2,
        size=2,
        annotations={c.EXCLUSIVE_KEY_ANNOTATION: "topology.kubernetes.io/rack", "note": "x"},
    )
    body["metadata"]["labels"] = {"team": "a"}
    await create_available(kube, ns, body)
    sts = await kube.get(leader_sts_path(ns, name))
    assert sts["metadata"]["annotations"].get("note") == "x"
    template = sts["spec"]["template"]["metadata"]["annotations"]
    assert template.get(c.EXCLUSIVE_KEY_ANNOTATION) == "topology.kubernetes.io/rack"

    # kubectl annotate lws tidy exclusive-topology- note-; kubectl label lws tidy team-
    await kube.patch(
        lws_path(ns, name),
        {
            "metadata": {
                "annotations": {c.EXCLUSIVE_KEY_ANNOTATION: None, "note": None},
                "labels": {"team": None},
            }
        },
    )

    def tidied(o: dict[str, Any]) -> bool:
        meta, tmeta = o["metadata"], o["spec"]["template"]["metadata"]
        return (
            "note" not in (meta.get("annotations") or {})
            and c.EXCLUSIVE_KEY_ANNOTATION not in (meta.get("annotations") or {})
            and "team" not in (meta.get("labels") or {})
            and c.EXCLUSIVE_KEY_ANNOTATION not in (tmeta.get("annotations") or {})
        )

    await wait_leader_sts(kube, ns, name, tidied, "the removed label and annotations gone")
    # The template changed, so the StatefulSet controller replaces the leaders (as upstream's
    # does right away); once done, a scale-up must change nothing of the template.
    done = await wait_leader_sts(kube, ns, name, settled, "leaders replaced and Ready")
    await wait_lws(kube, ns, name, lambda o: is_available(o, 2), "Available again")
    revision = done["status"]["updateRevision"]
    await kube.patch(lws_path(ns, name), {"spec": {"replicas": 3}})
    scaled = await wait_leader_sts(
        kube, ns, name, lambda o: o["spec"]["replicas"] == 3 and settled(o), "scaled to 3"
    )
    assert scaled["status"]["updateRevision"] == revision, "the scale-up rolled the leaders"
    assert scaled["status"]["currentRevision"] == revision
