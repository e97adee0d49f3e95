"""Would a server-side apply change anything (plan/lws/applied.py)?"""

from __future__ import annotations

import copy
from typing import Any

from lws_operator.plan.lws.applied import apply_changes_nothing, owned_fields, still_applied

BODY: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "StatefulSet",
    "metadata": {
        "name": "demo",
        "namespace": "ns",
        "labels": {"team": "a"},
        "annotations": {"leaderworkerset.sigs.k8s.io/exclusive-topology": "rack"},
    },
    "spec": {
        "replicas": 2,
        "template": {
            "metadata": {"annotations": {"leaderworkerset.sigs.k8s.io/exclusive-topology": "rack"}},
            "spec": {
                "nodeSelector": {"pool": "gpu"},
                "containers": [
                    {"name": "c", "image": "img", "ports": [{"containerPort": 80}]},
                ],
            },
        },
    },
}

# What the API server records for the apply of BODY by manager "lws" (fieldsV1).
FIELDS: dict[str, Any] = {
    "f:metadata": {
        "f:labels": {"f:team": {}},
        "f:annotations": {"f:leaderworkerset.sigs.k8s.io/exclusive-topology": {}},
    },
    "f:spec": {
        "f:replicas": {},
        "f:template": {
            "f:metadata": {
                "f:annotations": {"f:leaderworkerset.sigs.k8s.io/exclusive-topology": {}}
            },
            "f:spec": {
                "f:nodeSelector": {},  # an atomic map
                "f:containers": {
                    'k:{"name":"c"}': {
                        ".": {},
                        "f:name": {},
                        "f:image": {},
                        "f:ports": {
                            'k:{"containerPort":80,"protocol":"TCP"}': {
                                ".": {},
                                "f:containerPort": {},
                            }
                        },
                    }
                },
            },
        },
    },
}


def observed(body: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
    """The object as the server stores it: the applied values, defaults, managedFields."""
    obj = copy.deepcopy(body)
    obj["metadata"]["uid"] = "u"
    obj["metadata"]["managedFields"] = [
        {"manager": "kube-controller-manager", "operation": "Update", "fieldsV1": {}},
        {"manager": "lws", "operation": "Apply", "fieldsV1": fields},
        {"manager": "lws", "operation": "Update", "subresource": "status", "fieldsV1": {}},
    ]
    obj["spec"]["template"]["spec"]["containers"][0]["ports"][0]["protocol"] = "TCP"
    obj["spec"]["template"]["spec"]["restartPolicy"] = "Always"  # a default
    return obj


def without_annotation(body: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(body)
    del out["metadata"]["annotations"]["leaderworkerset.sigs.k8s.io/exclusive-topology"]
    del out["spec"]["template"]["metadata"]["annotations"][
        "leaderworkerset.sigs.k8s.io/exclusive-topology"
    ]
    return out


def test_the_same_apply_changes_nothing() -> None:
    assert apply_changes_nothing(observed(BODY, FIELDS), BODY, "lws")


def test_a_field_no_longer_applied_is_a_change_though_everything_wanted_is_there() -> None:
    """The regression: with the annotation gone from the LWS, the StatefulSet still contains
    everything the new body asks for, but the apply would remove the annotation."""
    assert not apply_changes_nothing(observed(BODY, FIELDS), without_annotation(BODY), "lws")
    label_gone = copy.deepcopy(BODY)
    label_gone["metadata"]["labels"] = {}
    assert not apply_changes_nothing(observed(BODY, FIELDS), label_gone, "lws")


def test_a_changed_value_is_a_change() -> None:
    changed = copy.deepcopy(BODY)
    changed["spec"]["replicas"] = 3
    assert not apply_changes_nothing(observed(BODY, FIELDS), changed, "lws")


def test_nothing_applied_yet_by_this_manager_is_a_change() -> None:
    obj = observed(BODY, FIELDS)
    obj["metadata"]["managedFields"] = obj["metadata"]["managedFields"][:1]
    assert owned_fields(obj, "lws") is None
    assert not apply_changes_nothing(obj, BODY, "lws")


def test_keyed_list_items_match_with_defaulted_key_fields() -> None:
    ports = FIELDS["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"c"}']
    assert still_applied(
        [{"name": "c", "image": "img", "ports": [{"containerPort": 80}]}], {'k:{"name":"c"}': ports}
    )
    assert not still_applied([{"name": "d"}], {'k:{"name":"c"}': ports})


def test_set_items() -> None:
    assert still_applied(["a", "b"], {'v:"a"': {}})
    assert not still_applied(["b"], {'v:"a"': {}})


def test_a_listed_object_without_api_version_and_kind_changes_nothing() -> None:
    """List responses carry no apiVersion or kind per item (an informer's first listing)."""
    listed = observed(BODY, FIELDS)
    del listed["apiVersion"], listed["kind"]
    assert apply_changes_nothing(listed, BODY, "lws")
