"""The admission patch: applied to the original it gives the mutated object (RFC 6902)."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonpatch  # a kopf dependency
from hypothesis import given
from hypothesis import strategies as st

from lws_operator.api import constants as c
from lws_operator.plan.jsonpatch import admission_patch, pointer_token
from lws_operator.plan.lws.pod_mutation import mutate_pod
from tests.unit.plan import pods
from tests.unit.plan.strategies import json_values


def _apply(original: dict[str, Any], patch: list[dict[str, Any]]) -> Any:
    # Through JSON text, as the API server receives it (which also undoes Python aliasing).
    return jsonpatch.apply_patch(json.loads(json.dumps(original)), json.loads(json.dumps(patch)))


def _strict(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def test_pointer_escaping() -> None:
    assert pointer_token(c.SET_NAME_LABEL) == "leaderworkerset.sigs.k8s.io~1name"
    assert pointer_token("a~/b") == "a~0~1b"
    assert pointer_token(3) == "3"


def test_equal_objects_give_no_operations() -> None:
    pod = pods.leader("lws-0", 2)
    assert admission_patch(pod, copy.deepcopy(pod)) == []


def test_absent_maps_are_added_whole() -> None:
    pod = pods.leader("lws-0", 2, annotations={c.EXCLUSIVE_KEY_ANNOTATION: "zone"})
    del pod["metadata"]["labels"][c.REVISION_KEY]
    pod["spec"]["containers"] = [{"name": "c"}]  # no env
    mutated = mutate_pod(pod)
    patch = admission_patch(pod, mutated)
    assert {"op": "add", "path": "/spec/affinity", "value": mutated["spec"]["affinity"]} in patch
    assert {
        "op": "add",
        "path": "/spec/containers/0/env",
        "value": mutated["spec"]["containers"][0]["env"],
    } in patch
    label = f"/metadata/labels/{pointer_token(c.GROUP_UNIQUE_HASH_LABEL)}"
    assert {
        "op": "add",
        "path": label,
        "value": mutated["metadata"]["labels"][c.GROUP_UNIQUE_HASH_LABEL],
    } in patch
    assert _apply(pod, patch) == mutated


def test_labels_and_annotations_absent_or_null() -> None:
    pod: dict[str, Any] = {"metadata": {"name": "a"}, "spec": {}}
    mutated = {
        "metadata": {"name": "a", "labels": {"x/y": "1"}, "annotations": {"k": "v"}},
        "spec": {},
    }
    patch = admission_patch(pod, mutated)
    assert patch == [
        {"op": "add", "path": "/metadata/labels", "value": {"x/y": "1"}},
        {"op": "add", "path": "/metadata/annotations", "value": {"k": "v"}},
    ]
    pod["metadata"]["labels"] = None
    patch = admission_patch(pod, mutated)
    assert patch[0] == {"op": "replace", "path": "/metadata/labels", "value": {"x/y": "1"}}
    assert _apply(pod, patch) == mutated


def test_removed_keys_and_json_types() -> None:
    original = {"a": 1, "b": True, "c": [1, 2], "d": {"e": 1.0}}
    mutated = {"a": True, "c": [1, 2, 3], "d": {"e": 1}}
    patch = admission_patch(original, mutated)
    assert patch == [
        {"op": "remove", "path": "/b"},
        {"op": "replace", "path": "/a", "value": True},
        {"op": "replace", "path": "/c", "value": [1, 2, 3]},
        {"op": "replace", "path": "/d/e", "value": 1},
    ]
    assert _strict(_apply(original, patch)) == _strict(mutated)


@given(
    st.dictionaries(st.text(max_size=4), json_values),
    st.dictionaries(st.text(max_size=4), json_values),
)
def test_patch_turns_any_object_into_any_other(
    original: dict[str, Any], mutated: dict[str, Any]
) -> None:
    assert _strict(_apply(original, admission_patch(original, mutated))) == _strict(mutated)


@given(json_values, json_values)
def test_patch_of_nested_values(a: Any, b: Any) -> None:
    original, mutated = {"spec": {"x": a, "~/": [a]}}, {"spec": {"x": b, "~/": [b]}}
    assert _strict(_apply(original, admission_patch(original, mutated))) == _strict(mutated)
