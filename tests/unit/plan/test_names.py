"""Names and keys: upstream's unit tests TestGenGroupUniqueKey and TestGetParentNameAndOrdinal."""

from __future__ import annotations

import hashlib

import pytest

from lws_operator.plan.lws import names


@pytest.mark.parametrize(
    ("namespace", "pod_name", "key"),
    [
        # Vectors from upstream's pod_webhook_test.go: the namespace changes the key.
        ("default", "test-sample", "95e88034e460983f51a9952fe128729fbc0663b5"),
        ("default", "podName", "390b34ab671d29e9997d7d4252b8bbf8da02f5b7"),
        ("leaderworkerset", "test-sample", "39f5d7e9122b9d94d3932e3720b43fd3b56347e8"),
    ],
)
def test_group_key(namespace: str, pod_name: str, key: str) -> None:
    assert names.group_key(namespace, pod_name) == key


def test_subgroup_key_is_not_namespace_qualified() -> None:
    # As upstream's pod webhook, kept: sha1("<leaderPodName>/<subgroupIndex>").
    expected = hashlib.sha1(b"test-sample-1/2").hexdigest()
    assert names.subgroup_key("test-sample-1", 2) == expected
    assert names.subgroup_key("test-sample-1", "2") == expected


@pytest.mark.parametrize(
    ("pod_name", "parsed"),
    [
        ("lws-samples-132", ("lws-samples", 132)),
        ("lws-samples-132-u", None),
        ("lws-samples-", None),
        ("lws-samples-0", ("lws-samples", 0)),
        ("lws-samples--1", ("lws-samples-", 1)),
        ("lws-samples1", None),
        ("lws-samples-1-0", ("lws-samples-1", 0)),
        # Beyond int32, as Go's ParseInt(.., 32) sees it.
        ("lws-2147483647", ("lws", 2147483647)),
        ("lws-2147483648", None),
        ("", None),
        ("-3", ("", 3)),
    ],
)
def test_parse_ordinal(pod_name: str, parsed: tuple[str, int] | None) -> None:
    assert names.parse_ordinal(pod_name) == parsed


def test_addresses_and_pod_names() -> None:
    assert names.leader_pod_name("test-sample", 1) == "test-sample-1"
    assert names.worker_pod_name("test-sample-1", 3) == "test-sample-1-3"
    assert names.pod_hostname("test-sample-1-3", "test-sample") == "test-sample-1-3.test-sample"
    # No .svc suffix (upstream's AddLWSVariables, pkg/utils/pod/pod_utils.go).
    assert (
        names.leader_address("test-sample", 1, "test-sample", "ns")
        == "test-sample-1.test-sample.ns"
    )
    assert names.pod_group_name("test", 0, "1") == "test-0-1"
