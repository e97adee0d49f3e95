"""The DisaggregatedSet revision hash is upstream's, byte for byte: against upstream's own
``ComputeRevision`` (through the test bed's ``dshash``, built on upstream's module) for
random role templates drawn from the CRD's pod schema, and against fixed values it printed
(which need no Go). Also: the committed Go layout is what upstream's types say."""

from __future__ import annotations

import copy
import json
import shutil
import string
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lws_operator.api import ds_crd
from lws_operator.plan import gojson
from lws_operator.plan.ds.revision import compute_revision, revision_document
from lws_testbed.dshash import DshashUnavailable, dshash_binary, upstream_layout, upstream_revisions

ROLES: list[dict[str, Any]] = [
    {
        "name": "prefill",
        "spec": {
            "replicas": 2,
            "leaderWorkerTemplate": {
                "size": 1,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "workerTemplate": {
                    "metadata": {"labels": {"a": "b<>&"}},
                    "spec": {
                        "containers": [
                            {
                                "name": "c",
                                "image": "nginx",
                                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                                "resources": {
                                    "limits": {
                                        "cpu": "1000m",
                                        "memory": "1.5Gi",
                                        "nvidia.com/gpu": 8,
                                    }
                                },
                            }
                        ]
                    },
                },
            },
        },
    },
    {
        "name": "decode",
        "spec": {
            "leaderWorkerTemplate": {
                "workerTemplate": {
                    "spec": {
                        "containers": [
                            {
                                "name": "c",
                                "image": "nginx",
                                "env": [{"name": "A", "value": "\u2028x\n\b"}],
                            }
                        ],
                        "tolerations": [],
                        "volumes": [{"name": "v", "emptyDir": {}}],
                    }
                }
            }
        },
    },
]
# Printed by upstream's ComputeRevision (sigs.k8s.io/lws v0.9.0, go1.26.8) for ROLES and for
# ROLES with the decode role alone / renamed.
GOLDEN = {"both": "2a8119d3", "empty": "4f53cda1"}


def test_fixed_values_printed_by_upstream() -> None:
    assert compute_revision(ROLES) == GOLDEN["both"]
    assert compute_revision([]) == GOLDEN["empty"]
    document = revision_document(ROLES)
    assert document.startswith('[{"name":"prefill","template":{"workerTemplate":{"metadata":')
    assert '"cpu":"1","memory":"1536Mi","nvidia.com/gpu":"8"' in document  # canonical
    assert r'"a":"b\u003c\u003e\u0026"' in document  # Go escapes HTML characters
    assert '"resources":{}' in document  # a struct is never omitted


def test_only_names_and_templates_count() -> None:
    other = copy.deepcopy(ROLES)
    other[0]["spec"]["replicas"] = 7
    other[0]["spec"]["rolloutStrategy"] = {"type": "RollingUpdate"}
    other[0]["metadata"] = {"labels": {"x": "y"}}
    assert compute_revision(other) == compute_revision(ROLES)
    other[1]["name"] = "decode-long"
    assert compute_revision(other) != compute_revision(ROLES)
    sized = copy.deepcopy(ROLES)
    sized[0]["spec"]["leaderWorkerTemplate"]["size"] = 2
    assert compute_revision(sized) != compute_revision(ROLES)


def test_a_value_go_could_not_decode_is_an_error() -> None:
    bad = copy.deepcopy(ROLES)
    bad[0]["spec"]["leaderWorkerTemplate"]["size"] = "two"
    with pytest.raises(gojson.GoJsonError):
        compute_revision(bad)


# --- against upstream itself ------------------------------------------------------------------


@pytest.fixture(scope="module")
def dshash() -> Path:
    try:
        return dshash_binary()
    except DshashUnavailable as e:
        if shutil.which("go") is None:
            pytest.skip("dshash is not built and Go is not on PATH to build it")
        raise AssertionError(f"dshash cannot be built: {e}") from e


def test_the_committed_layout_is_upstreams(dshash: Path) -> None:
    theirs, ours = upstream_layout(dshash), gojson.layout()
    assert (theirs["root"], theirs["structs"]) == (ours["root"], ours["structs"]), (
        "regenerate: dshash layout > lws_operator/api/go_layout.json"
    )
    assert theirs["source"].rsplit(", go", 1)[0] == ours["source"].rsplit(", go", 1)[0]


def test_the_fixed_examples_against_upstream(dshash: Path) -> None:
    objs = [{"spec": {"roles": ROLES}}, {"spec": {"roles": []}}]
    assert upstream_revisions(dshash, objs) == [GOLDEN["both"], GOLDEN["empty"]]


# Strings with what Go's encoder escapes, non-ASCII and the separators it writes as \u.
ESCAPED = ["<", ">", "&", '"', "\\", "\n", "\t", "\b", "\f", "\x01", "\u2028"]
TEXT = st.text(
    alphabet=st.sampled_from([*string.ascii_letters[:6], *ESCAPED, "é", "€", "😀"]), max_size=6
)
QUANTITY = st.one_of(
    st.integers(0, 4096),
    st.sampled_from(["1000m", "1.5Gi", "0.5", "100Mi", "1e3", "2k", "1024Ki", "0", "12e6"]),
    st.builds(
        lambda n, s: f"{n}{s}",
        st.integers(0, 5000),
        st.sampled_from(["", "m", "k", "Mi", "Gi", "M"]),
    ),
)
TIME = st.sampled_from(["2026-01-02T03:04:05Z", "2025-12-31T23:59:59+02:00"])
_INT_RANGE = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**53), 2**53)}


def values(schema: Mapping[str, Any], depth: int) -> st.SearchStrategy[Any]:
    """Values valid for a CRD schema node (what the API server would store)."""
    if schema.get("x-kubernetes-int-or-string"):
        if "pattern" in schema:
            return QUANTITY
        return st.one_of(st.integers(0, 100), st.sampled_from(["25%", "http", "1"]))
    kind = schema.get("type")
    if kind == "string":
        if schema.get("format") == "date-time":
            return TIME
        if "enum" in schema:
            return st.sampled_from(schema["enum"])
        return TEXT
    if kind == "integer":
        lo, hi = _INT_RANGE.get(schema.get("format", "int64"), _INT_RANGE["int64"])
        return st.one_of(st.integers(0, 3), st.integers(lo, hi))
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        if depth <= 0:
            return st.just([])
        return st.lists(values(schema["items"], depth - 1), max_size=2)
    if kind == "object":
        if "properties" in schema:
            return objects(schema, depth)
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping) and depth > 0:
            return st.dictionaries(TEXT, values(extra, depth - 1), max_size=3)
        return st.just({})
    return st.none()


def objects(schema: Mapping[str, Any], depth: int) -> st.SearchStrategy[dict[str, Any]]:
    props = schema["properties"]
    required = list(schema.get("required", []))
    optional = sorted(set(props) - set(required))

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        keys = required + (
            draw(st.lists(st.sampled_from(optional), max_size=4, unique=True))
            if optional and depth > 0
            else []
        )
        return {k: draw(values(props[k], depth - 1)) for k in keys}  # fmt: skip

    return build()


def _lwt_schema() -> dict[str, Any]:
    root = ds_crd.open_api_schema()
    role = root["properties"]["spec"]["properties"]["roles"]["items"]
    schema: dict[str, Any] = role["properties"]["spec"]["properties"]["leaderWorkerTemplate"]
    return schema


LWT = objects(_lwt_schema(), 6)
ROLE_SETS = st.lists(
    st.builds(lambda n, t: {"name": n, "spec": {"leaderWorkerTemplate": t}}, TEXT, LWT),
    min_size=1,
    max_size=3,
)


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(ROLE_SETS, min_size=20, max_size=20))
def test_random_templates_hash_as_upstreams(
    dshash: Path, batch: list[list[dict[str, Any]]]
) -> None:
    ours = [compute_revision(roles) for roles in batch]
    theirs = upstream_revisions(dshash, [{"spec": {"roles": roles}} for roles in batch])
    for roles, mine, upstream in zip(batch, ours, theirs, strict=True):
        assert mine == upstream, json.dumps(roles)[:2000] + "\n" + revision_document(roles)[:2000]
