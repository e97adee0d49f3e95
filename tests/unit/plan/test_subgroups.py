"""Subgroup index arithmetic (upstream's getSubGroupIndex, pkg/webhooks/pod_webhook.go; its unit
test TestGetSubGroupIndex)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lws_operator.api import constants as c
from lws_operator.plan.lws import subgroups
from lws_operator.plan.lws.pod_mutation import mutate_pod
from tests.unit.plan import pods

LEADER_WORKER = "LeaderWorker"
LEADER_EXCLUDED = "LeaderExcluded"


@pytest.mark.parametrize(
    ("size", "subgroup_size", "worker", "index"),
    [
        (4, 2, 2, 1),  # "Even number of pods"
        (5, 2, 2, 0),  # "Odd number of pods, first subgroup has an extra pod"
        # subGroupSize 1 (#918): worker w is alone in subgroup w.
        (4, 1, 1, 1),
        (4, 1, 3, 3),
        (1, 1, 0, 0),
    ],
)
def test_subgroup_index(size: int, subgroup_size: int, worker: int, index: int) -> None:
    assert subgroups.subgroup_index(size, subgroup_size, worker) == index


def test_subgroup_size_below_one_is_rejected() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        subgroups.subgroup_index(4, 0, 1)


def layout(size: int, subgroup_size: int, policy: str) -> dict[int, set[int]]:
    """Subgroup index -> worker indices (0 = leader), as the webhook labels a group's pods."""
    annotations = {
        c.SUBGROUP_SIZE_ANNOTATION: str(subgroup_size),
        c.SUBGROUP_POLICY_TYPE_ANNOTATION: policy,
    }
    group = [pods.leader("lws-0", size, annotations=annotations)]
    group += [pods.worker(f"lws-0-{w}", size, 0, annotations=annotations) for w in range(1, size)]
    members: dict[int, set[int]] = {}
    for w, p in enumerate(group):
        index = pods.labels_of(mutate_pod(p)).get(c.SUBGROUP_INDEX_LABEL)
        if index is not None:
            members.setdefault(int(index), set()).add(w)
    return members


def expected_layout(size: int, sg: int, policy: str) -> dict[int, set[int]]:
    """Upstream's getSubGroupIndex in words: chunks of sg pods; the leader is subgroup 0's extra pod
    when only size-1 is a multiple of sg; with LeaderExcluded it is in none (and with sg 1, worker w
    is subgroup w)."""
    if policy == LEADER_EXCLUDED and sg == 1:
        return {w: {w} for w in range(1, size)}
    if policy == LEADER_EXCLUDED:
        return {i: set(range(i * sg + 1, (i + 1) * sg + 1)) for i in range((size - 1) // sg)}
    if size % sg == 0:
        return {i: set(range(i * sg, (i + 1) * sg)) for i in range(size // sg)}
    chunks = {i: set(range(i * sg + 1, (i + 1) * sg + 1)) for i in range((size - 1) // sg)}
    chunks[0].add(0)
    return chunks


@pytest.mark.parametrize(
    ("policy", "size", "subgroup_size", "expected"),
    [
        # The layouts upstream's pod webhook gives (getSubGroupIndex; the leader has no subgroup
        # under LeaderExcluded).
        (LEADER_WORKER, 4, 2, {0: {0, 1}, 1: {2, 3}}),
        (LEADER_WORKER, 5, 2, {0: {0, 1, 2}, 1: {3, 4}}),
        (LEADER_EXCLUDED, 5, 2, {0: {1, 2}, 1: {3, 4}}),
        (LEADER_WORKER, 4, 1, {0: {0}, 1: {1}, 2: {2}, 3: {3}}),
        (LEADER_EXCLUDED, 4, 1, {1: {1}, 2: {2}, 3: {3}}),
    ],
)
def test_layouts_table(
    policy: str, size: int, subgroup_size: int, expected: dict[int, set[int]]
) -> None:
    assert layout(size, subgroup_size, policy) == expected
    assert expected_layout(size, subgroup_size, policy) == expected


def _valid(size: int, sg: int, policy: str) -> bool:
    """The LWS validation rules for subGroupSize (upstream's validateUpdateSubGroupPolicy,
    pkg/webhooks/leaderworkerset_webhook.go)."""
    if sg > size or (size % sg and (size - 1) % sg):
        return False
    return policy == LEADER_WORKER or (size - 1) % sg == 0


VALID_CASES = [
    (size, sg, policy)
    for size in (4, 5, 9)
    for sg in (1, 2, 4)
    for policy in (LEADER_WORKER, LEADER_EXCLUDED)
    if _valid(size, sg, policy)
]


def test_valid_cases_cover_both_policies_and_all_sizes() -> None:
    assert len(VALID_CASES) == 16
    assert {(s, p) for s, _, p in VALID_CASES} >= {(4, LEADER_WORKER), (5, LEADER_EXCLUDED)}
    assert {s for s, _, _ in VALID_CASES} == {4, 5, 9}


@given(st.sampled_from(VALID_CASES))
def test_webhook_layouts_for_sizes_4_5_9(case: tuple[int, int, str]) -> None:
    size, sg, policy = case
    assert layout(size, sg, policy) == expected_layout(size, sg, policy)


@st.composite
def valid_group(draw: st.DrawFn) -> tuple[int, int, str]:
    size = draw(st.integers(1, 200))
    policy = draw(st.sampled_from([LEADER_WORKER, LEADER_EXCLUDED]))
    sizes = [sg for sg in range(1, size + 1) if _valid(size, sg, policy)]
    if not sizes:
        policy, sizes = LEADER_WORKER, [size]
    return size, draw(st.sampled_from(sizes)), policy


@given(valid_group())
def test_subgroup_index_matches_the_layout_rules(case: tuple[int, int, str]) -> None:
    size, sg, policy = case
    model = expected_layout(size, sg, policy)
    for w in range(1, size):
        assert w in model[subgroups.subgroup_index(size, sg, w)]
