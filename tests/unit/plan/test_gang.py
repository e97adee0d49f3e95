"""PodGroups of both gang providers (upstream's pkg/schedulerprovider/volcano_provider.go).

``GOLDEN`` pairs were computed by upstream's arithmetic itself: ``resourcehelper.PodRequests``
(k8s.io/component-helpers v0.36.5) of the leader, plus ``quotav1.Add`` of the worker's
``size - 1`` times, as ``CalculatePGMinResources`` does (a throwaway Go program; not part of
the test run).
"""

from __future__ import annotations

from typing import Any

import pytest

from lws_operator.api import constants as c
from lws_operator.api.models import LeaderWorkerSet, LeaderWorkerSetSpec
from lws_operator.plan.lws import gang


def req(name: str, **requests: Any) -> dict[str, Any]:
    return {"name": name, "resources": {"requests": requests}}


# (leader pod spec or None, worker pod spec, size) -> minResources
GOLDEN: list[tuple[dict[str, Any] | None, dict[str, Any], int, dict[str, str]]] = [
    (None, {"containers": [req("a", cpu="1")]}, 2, {"cpu": "2"}),
    (
        {"containers": [req("l", cpu="100m", memory="1Gi")]},
        {
            "initContainers": [req("i", cpu="4")],
            "containers": [req("w", cpu="200m", memory="512Mi")],
        },
        4,
        {"cpu": "12100m", "memory": "2560Mi"},
    ),
    (
        None,
        {
            "initContainers": [
                {**req("s1", cpu="500m", memory="100Mi"), "restartPolicy": "Always"},
                req("i", cpu="2", memory="1Gi"),
                {**req("s2", cpu="250m"), "restartPolicy": "Always"},
            ],
            "containers": [req("w", cpu="1")],
        },
        3,
        {"cpu": "7500m", "memory": "3372Mi"},
    ),
    (
        None,
        {
            "resources": {"requests": {"cpu": "4", "memory": "8Gi", "hugepages-2Mi": "1Gi"}},
            "containers": [req("w", **{"cpu": "1", "nvidia.com/gpu": "2"})],
        },
        2,
        {"cpu": "8", "hugepages-2Mi": "2Gi", "memory": "16Gi", "nvidia.com/gpu": "4"},
    ),
    (
        None,
        {"overhead": {"cpu": "250m", "memory": "120Mi"}, "containers": [req("w", memory="1G")]},
        3,
        {"cpu": "750m", "memory": "3377487360"},
    ),
    (
        {"containers": [req("l", **{"nvidia.com/gpu": "8"})]},
        {"containers": [{"name": "w", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]},
        5,
        {"nvidia.com/gpu": "8"},  # limits alone are no request in a template
    ),
    (
        {"containers": [req("l", memory="1G")]},
        {"containers": [req("w", memory="1Gi")]},
        2,
        {"memory": "2073741824"},  # the leader's decimal format wins
    ),
    ({"containers": [req("l", cpu="3")]}, {"containers": [req("w", cpu="1")]}, 1, {"cpu": "3"}),
    (
        None,
        {
            "containers": [
                req("a", **{"nvidia.com/gpu": 2, "cpu": "1.5"}),
                req("b", **{"cpu": "500m", "ephemeral-storage": "1e3"}),
            ]
        },
        3,
        {"cpu": "6", "ephemeral-storage": "3e3", "nvidia.com/gpu": "6"},
    ),
    (None, {"containers": [{"name": "a"}]}, 3, {}),
]


def spec_of(leader: dict[str, Any] | None, worker: dict[str, Any], size: int) -> dict[str, Any]:
    template: dict[str, Any] = {"size": size, "workerTemplate": {"spec": worker}}
    if leader is not None:
        template["leaderTemplate"] = {"spec": leader}
    return {"replicas": 2, "leaderWorkerTemplate": template}


@pytest.mark.parametrize(("leader", "worker", "size", "want"), GOLDEN)
def test_min_resources_as_upstream(
    leader: dict[str, Any] | None, worker: dict[str, Any], size: int, want: dict[str, str]
) -> None:
    spec = LeaderWorkerSetSpec.model_validate(spec_of(leader, worker, size))
    assert gang.min_resources(spec) == want


def lws(annotations: dict[str, str] | None = None, **spec: Any) -> LeaderWorkerSet:
    body = spec_of({"containers": [req("l", cpu="1")]}, {"containers": [req("w", cpu="2")]}, 4)
    body.update(spec)
    return LeaderWorkerSet.model_validate(
        {
            "metadata": {"name": "sample", "namespace": "ns", "annotations": annotations or {}},
            "spec": body,
        }
    )


LEADER = {
    "metadata": {
        "name": "sample-1",
        "uid": "leader-uid",
        "labels": {c.GROUP_INDEX_LABEL: "1", c.REVISION_KEY: "rk"},
    }
}
OWNER = {
    "apiVersion": "v1",
    "kind": "Pod",
    "name": "sample-1",
    "uid": "leader-uid",
    "controller": True,
    "blockOwnerDeletion": True,
}
LABELS = {c.SET_NAME_LABEL: "sample", c.GROUP_INDEX_LABEL: "1", c.REVISION_KEY: "rk"}


NATIVE = gang.GangApi("kubernetes", "scheduling.k8s.io/v1alpha2")
APIS = {"kubernetes": NATIVE, "volcano": gang.VOLCANO}


@pytest.mark.parametrize("version", gang.NATIVE_VERSIONS)
def test_native_pod_group(version: str) -> None:
    """One shape in every native version the operator knows; only the apiVersion differs."""
    obj = lws({"volcano.sh/x": "y"})
    api = gang.GangApi("kubernetes", f"scheduling.k8s.io/{version}")
    assert gang.pod_group(api, obj, obj.spec, LEADER) == {
        "apiVersion": f"scheduling.k8s.io/{version}",
        "kind": "PodGroup",
        "metadata": {
            "name": "sample-1-rk",
            "namespace": "ns",
            "labels": LABELS,
            "ownerReferences": [OWNER],
        },
        "spec": {"schedulingPolicy": {"gang": {"minCount": 4}}},
    }


def test_volcano_pod_group() -> None:
    annotations = {
        "volcano.sh/task": "t",
        c.VOLCANO_QUEUE_ANNOTATION: "research",
        "other/x": "y",
    }
    obj = lws(annotations)
    assert gang.pod_group(gang.VOLCANO, obj, obj.spec, LEADER) == {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": "sample-1-rk",
            "namespace": "ns",
            "labels": LABELS,
            "annotations": {"volcano.sh/task": "t"},
            "ownerReferences": [OWNER],
        },
        "spec": {"minMember": 4, "minResources": {"cpu": "7"}, "queue": "research"},
    }


def test_volcano_without_queue_or_volcano_annotations() -> None:
    obj = lws({"other/x": "y"})
    body = gang.pod_group(gang.VOLCANO, obj, obj.spec, LEADER)
    assert "annotations" not in body["metadata"] and "queue" not in body["spec"]


@pytest.mark.parametrize("provider", ["kubernetes", "volcano"])
def test_leader_ready_gangs_only_the_leader(provider: str) -> None:
    obj = lws(startupPolicy="LeaderReady")
    body = gang.pod_group(APIS[provider], obj, obj.spec, LEADER)
    count = body["spec"].get("minMember") or body["spec"]["schedulingPolicy"]["gang"]["minCount"]
    assert count == 1


def test_size_and_templates_come_from_the_leaders_revision() -> None:
    obj = lws()
    recorded = LeaderWorkerSetSpec.model_validate(
        spec_of(None, {"containers": [req("w", cpu="1")]}, 2)
    )
    body = gang.pod_group(gang.VOLCANO, obj, recorded, LEADER)
    assert body["spec"]["minMember"] == 2 and body["spec"]["minResources"] == {"cpu": "2"}


def test_unknown_provider() -> None:
    with pytest.raises(ValueError, match="unknown gang provider 'slurm'"):
        gang.GangApi("slurm", "x/v1")
    with pytest.raises(ValueError, match="unknown gang provider 'slurm'"):
        gang.resolve("slurm", {})


PG = frozenset({"podgroups", "podgroups/status", "workloads"})
V1 = frozenset({"priorityclasses"})


# (served: scheduling.k8s.io version -> resources, as discovered) -> native apiVersion or None
VERSIONS: list[tuple[str, dict[str, frozenset[str]], str | None]] = [
    ("1.31 / 1.33: v1 only", {"v1": V1}, None),
    ("group not served at all", {}, None),
    (
        "1.35 with GenericWorkload: v1alpha1 Workloads only",
        {"v1": V1, "v1alpha1": frozenset({"workloads"})},
        None,
    ),
    ("1.36 with the gates and runtime-config", {"v1": V1, "v1alpha2": PG}, "v1alpha2"),
    (
        "1.36 without GenericWorkload: the version, no resources",
        {"v1": V1, "v1alpha2": frozenset()},
        None,
    ),
    ("1.36 Workloads but no PodGroups", {"v1": V1, "v1alpha2": frozenset({"workloads"})}, None),
    ("1.37 with v1beta1", {"v1": V1, "v1beta1": PG}, "v1beta1"),
    ("1.37 with v1beta1 and v1alpha3", {"v1": V1, "v1beta1": PG, "v1alpha3": PG}, "v1beta1"),
    ("1.37 with v1alpha3 only", {"v1": V1, "v1alpha3": PG}, "v1alpha3"),
    ("a mixed-version control plane", {"v1alpha2": PG, "v1beta1": PG}, "v1beta1"),
    ("an unknown newer version alone", {"v1": V1 | {"podgroups"}}, None),
    ("an unknown version beside a known one", {"v2": PG, "v1alpha2": PG}, "v1alpha2"),
]


@pytest.mark.parametrize(("case", "served", "want"), VERSIONS, ids=[v[0] for v in VERSIONS])
def test_native_api_is_the_newest_known_version_serving_podgroups(
    case: str, served: dict[str, frozenset[str]], want: str | None
) -> None:
    expected = None if want is None else f"scheduling.k8s.io/{want}"
    assert gang.native_api(served) == expected
    resolved = gang.resolve("kubernetes", served)
    assert (resolved and resolved.api_version) == expected
    if resolved is not None:
        assert resolved.provider == "kubernetes"
        assert resolved.group_version == ("scheduling.k8s.io", want)


@pytest.mark.parametrize("served", [{}, {"v1beta1": PG}])
def test_volcano_needs_no_discovery(served: dict[str, frozenset[str]]) -> None:
    """Its CRD may come later: PodGroup creation retries until it is served."""
    assert gang.resolve("volcano", served) == gang.VOLCANO
    assert gang.VOLCANO.api_version == "scheduling.volcano.sh/v1beta1"


def test_unavailable_names_the_feature_the_versions_and_the_cluster() -> None:
    message = gang.unavailable("v1.33.13", {"v1": V1})
    assert message == (
        "gang scheduling with the kubernetes provider needs the scheduling.k8s.io PodGroup API "
        "(v1alpha2 in Kubernetes 1.36 with the GenericWorkload and GangScheduling feature "
        "gates and --runtime-config=scheduling.k8s.io/v1alpha2=true, v1beta1 in 1.37 with "
        "GenericWorkload and --runtime-config=scheduling.k8s.io/v1beta1=true); this cluster "
        "(v1.33.13) serves none: LeaderWorkerSets are run without gangs"
    )
    newer = gang.unavailable("v1.40.0", {"v1": V1 | {"podgroups"}})
    assert "(v1.40.0) serves PodGroups only in v1, which this operator does not know" in newer
    event = gang.unavailable_event(message)
    assert (event.type, event.reason, event.note) == ("Warning", gang.UNAVAILABLE_REASON, message)
    assert len(message) < 1024  # an Event's note


@pytest.mark.parametrize("provider", ["kubernetes", "volcano"])
def test_name_matches_the_pod_webhooks(provider: str) -> None:
    """The controller names the PodGroup from the leader pod's labels exactly as the webhook
    names it in every pod of the group."""
    from lws_operator.plan.lws.pod_mutation import mutate_pod
    from tests.unit.plan import pods

    mutated = mutate_pod(pods.leader("sample-1", 4, lws="sample"), gang_provider=provider)
    if provider == "kubernetes":
        named = mutated["spec"]["schedulingGroup"]["podGroupName"]
    else:
        named = mutated["metadata"]["annotations"][c.POD_GROUP_NAME_ANNOTATION]
    assert named == gang.pod_group_name("sample", mutated) == "sample-1-rev1"


def test_follow_leader_adds_a_required_affinity_to_the_group() -> None:
    sts: dict[str, Any] = {
        "spec": {
            "template": {
                "spec": {
                    "affinity": {
                        "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}
                    }
                }
            }
        }
    }
    leader = {"metadata": {"labels": {c.GROUP_UNIQUE_HASH_LABEL: "gk"}}}
    gang.follow_leader(sts, leader, "topology.kubernetes.io/rack")
    affinity = sts["spec"]["template"]["spec"]["affinity"]["podAffinity"]
    assert affinity == {
        "preferredDuringSchedulingIgnoredDuringExecution": [],
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {
                    "matchExpressions": [
                        {"key": c.GROUP_UNIQUE_HASH_LABEL, "operator": "In", "values": ["gk"]}
                    ]
                },
                "topologyKey": "topology.kubernetes.io/rack",
            }
        ],
    }


def test_a_refused_pod_group_hints_at_its_api() -> None:
    volcano = gang.creation_failed("g", gang.VOLCANO_API, 404, "not found")
    assert volcano.note == (
        "Failed to create PodGroup g: not found "
        "(is the scheduling.volcano.sh/v1beta1 PodGroup API served?)"
    )
    native = gang.creation_failed("g", "scheduling.k8s.io/v1alpha2", 404, "not found")
    assert native.note == (
        "Failed to create PodGroup g: not found (is the scheduling.k8s.io/v1alpha2 PodGroup API "
        "served? The version is chosen when the operator starts: restart it)"
    )
    denied = gang.creation_failed("g", "scheduling.k8s.io/v1beta1", 403, "forbidden")
    assert denied.note == "Failed to create PodGroup g: forbidden"
