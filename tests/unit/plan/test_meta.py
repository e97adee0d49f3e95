"""The metadata readers of plan/meta.py: a missing object, missing, null or malformed metadata
and unset fields read as the defaults; set fields as they are."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from lws_operator.plan.meta import (
    annotations_of,
    controller_of,
    creation_timestamp_of,
    deletion_timestamp_of,
    generation_of,
    is_deleting,
    labels_of,
    meta_of,
    name_of,
    namespace_of,
    resource_version_of,
    uid_of,
)

Reader = Callable[[Mapping[str, Any] | None], Any]

# Objects without any metadata to read: every reader gives its default.
EMPTY: list[Mapping[str, Any] | None] = [
    None,
    {},
    {"metadata": None},
    {"metadata": {}},
    {"metadata": "not a mapping"},
]

FULL: dict[str, Any] = {
    "metadata": {
        "name": "sample",
        "namespace": "default",
        "uid": "u-1",
        "resourceVersion": "42",
        "generation": 3,
        "creationTimestamp": "2024-01-02T03:04:05Z",
        "deletionTimestamp": "2024-01-02T03:05:05Z",
        "labels": {"app": "x"},
        "annotations": {"note": "y"},
    }
}

# Every field FULL sets, null.
NULL_FIELDS: dict[str, Any] = {"metadata": dict.fromkeys(FULL["metadata"])}

READERS: list[tuple[str, Reader, Any, Any]] = [
    # (reader, function, default, value read from FULL)
    ("meta_of", meta_of, {}, FULL["metadata"]),
    ("labels_of", labels_of, {}, {"app": "x"}),
    ("annotations_of", annotations_of, {}, {"note": "y"}),
    ("name_of", name_of, "", "sample"),
    ("namespace_of", namespace_of, "", "default"),
    ("uid_of", uid_of, "", "u-1"),
    ("resource_version_of", resource_version_of, "", "42"),
    ("generation_of", generation_of, 0, 3),
    ("creation_timestamp_of", creation_timestamp_of, "", "2024-01-02T03:04:05Z"),
    ("deletion_timestamp_of", deletion_timestamp_of, "", "2024-01-02T03:05:05Z"),
]


@pytest.mark.parametrize(("_", "read", "default", "value"), READERS)
@pytest.mark.parametrize("obj", EMPTY)
def test_default_without_metadata(
    _: str, read: Reader, default: Any, value: Any, obj: Mapping[str, Any] | None
) -> None:
    assert read(obj) == default
    assert type(read(obj)) is type(default)


@pytest.mark.parametrize(("_", "read", "default", "value"), READERS)
def test_default_with_null_fields(_: str, read: Reader, default: Any, value: Any) -> None:
    if read is meta_of:
        assert read(NULL_FIELDS) is NULL_FIELDS["metadata"]
    else:
        assert read(NULL_FIELDS) == default
        assert type(read(NULL_FIELDS)) is type(default)


@pytest.mark.parametrize(("_", "read", "default", "value"), READERS)
def test_value_with_metadata(_: str, read: Reader, default: Any, value: Any) -> None:
    assert read(FULL) == value
    assert type(read(FULL)) is type(default)


def test_meta_of_is_the_object_metadata_not_a_copy() -> None:
    assert meta_of(FULL) is FULL["metadata"]


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        ({"labels": None, "annotations": None}, ({}, {})),
        ({"labels": ["a"], "annotations": "b"}, ({}, {})),  # not mappings: read as none
    ],
)
def test_labels_and_annotations_not_mappings(
    metadata: dict[str, Any], expected: tuple[dict[str, str], dict[str, str]]
) -> None:
    obj = {"metadata": metadata}
    assert (labels_of(obj), annotations_of(obj)) == expected


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        ({"resourceVersion": 7, "generation": "5"}, ("7", 5)),  # coerced as the callers did
        ({"resourceVersion": "", "generation": None}, ("", 0)),
    ],
)
def test_resource_version_and_generation_coerced(
    metadata: dict[str, Any], expected: tuple[str, int]
) -> None:
    obj = {"metadata": metadata}
    assert (resource_version_of(obj), generation_of(obj)) == expected


@pytest.mark.parametrize(
    ("obj", "deleting"),
    [
        ({}, False),
        ({"metadata": None}, False),
        ({"metadata": {"deletionTimestamp": None}}, False),
        ({"metadata": {"deletionTimestamp": ""}}, False),
        ({"metadata": {"deletionTimestamp": "2024-01-02T03:05:05Z"}}, True),
    ],
)
def test_is_deleting(obj: dict[str, Any], deleting: bool) -> None:
    assert is_deleting(obj) is deleting


@pytest.mark.parametrize(
    ("obj", "ref"),
    [
        ({}, None),
        ({"metadata": None}, None),
        ({"metadata": {"ownerReferences": None}}, None),
        ({"metadata": {"ownerReferences": [{"uid": "a"}]}}, None),
        (
            {"metadata": {"ownerReferences": [{"uid": "a"}, {"uid": "b", "controller": True}]}},
            {"uid": "b", "controller": True},
        ),
    ],
)
def test_controller_of(obj: dict[str, Any], ref: dict[str, Any] | None) -> None:
    assert controller_of(obj) == ref
