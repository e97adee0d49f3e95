"""The cache's table of groups (plan/lws/groups.py ``GroupTable``): the sums and marked groups it
keeps as groups are replaced are what a count over the groups gives, and the planners that
read them decide over a table what they decide over a plain list."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lws_operator.api.models import RestartPolicy
from lws_operator.plan.lws.groups import Group, GroupTable, group_at, tally, where
from lws_operator.plan.lws.nodehealth import node_problems
from lws_operator.plan.lws.restart import plan_recreations
from lws_operator.plan.lws.status import count_groups
from tests.unit.plan.groups import CURRENT, group

SIZE = 2


def _group(index: int, kind: int) -> Group:
    """One of a few group states by ``kind``: ready, unready, outdated, without workers,
    without a leader, failed (its leader's container restarted), on node ``n<kind>``."""
    if kind == 4:
        return Group(index, None)
    g = group(index, ready=kind != 1, updated=kind != 2, workers=kind != 3)
    leader = dict(g.leader or {})
    leader["spec"] = {"nodeName": f"n{kind}"}
    if kind == 5:
        leader["status"] = {
            **leader["status"],
            "containerStatuses": [{"name": "c", "restartCount": 1}],
        }
    return Group(index, leader, g.workers)


# Steps: ("put", index, kind) puts a group at index (clipped to the next index), and
# ("truncate", count) keeps the first count groups.
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.integers(0, 12), st.integers(0, 5)),
        st.tuples(st.just("truncate"), st.integers(0, 12)),
    ),
    max_size=40,
)


def _ready(g: Group) -> tuple[int, ...]:
    return (g.ready(SIZE), g.updated(SIZE, CURRENT), g.leader is None)


def _broken(g: Group) -> bool:
    return g.broken_by is not None


@settings(max_examples=200, deadline=None)
@given(STEPS, st.integers(0, 40))
def test_sums_and_marks_follow_every_change(steps: list[tuple[object, ...]], asked: int) -> None:
    table = GroupTable()
    for n, step in enumerate(steps):
        if step[0] == "put":
            _, index, kind = step
            assert isinstance(index, int) and isinstance(kind, int)
            table.put(_group(min(index, len(table)), kind))
        else:
            count = step[1]
            assert isinstance(count, int)
            table.truncate(count)
        if n == asked:  # sums first asked for mid-way, then kept through the rest
            tally(table, "ready", _ready, 3)
            where(table, "broken", _broken)
    groups = list(table)
    assert [g.index for g in groups] == list(range(len(groups)))
    assert tally(table, "ready", _ready, 3) == tally(groups, "ready", _ready, 3)
    assert where(table, "broken", _broken) == where(groups, "broken", _broken)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 5), max_size=12), st.integers(0, 12), st.integers(0, 3))
def test_planners_decide_the_same_over_a_table(
    kinds: list[int], replicas: int, partition: int
) -> None:
    table = GroupTable()
    for i in range(len(kinds)):
        table.put(_group(i, 0))
    # Replaced after the table's sums and marks exist, as pod events replace them.
    for i, kind in enumerate(kinds):
        count_groups(table, key=CURRENT, replicas=replicas, partition=partition, size=SIZE)
        node_problems(table, {}, frozenset({"n0"}))
        table.put(_group(i, kind))
    groups = list(table)
    failed = [i for i, k in enumerate(kinds) if k == 1]
    for failures in ((), failed):
        assert count_groups(
            table, key=CURRENT, replicas=replicas, partition=partition, size=SIZE, failed=failures
        ) == count_groups(
            groups, key=CURRENT, replicas=replicas, partition=partition, size=SIZE, failed=failures
        )
    nodes = {"n1": {"metadata": {"name": "n1"}, "status": {"conditions": []}}}
    assert node_problems(table, nodes, frozenset({"n0"})) == node_problems(
        groups, nodes, frozenset({"n0"})
    )
    args = dict(policy=RestartPolicy.RECREATE_GROUP_ON_POD_RESTART, lws_annotations={})
    assert plan_recreations(
        **args, lws_name="test-sample", size=SIZE, groups=table, pods={}
    ) == plan_recreations(**args, lws_name="test-sample", size=SIZE, groups=groups, pods={})


def test_a_put_past_the_next_index_is_refused() -> None:
    table = GroupTable()
    table.put(_group(0, 0))
    try:
        table.put(_group(2, 0))
    except IndexError as e:
        assert "group 2" in str(e)
    else:
        raise AssertionError("a gap in the table was accepted")


def test_group_at_finds_by_position_or_by_index() -> None:
    table = GroupTable()
    for i in range(3):
        table.put(_group(i, 0))
    assert group_at(table, 1) is table[1]
    assert group_at(table, 5) is None
    shuffled = [_group(4, 0), _group(2, 0)]
    assert group_at(shuffled, 2) is shuffled[1]
    assert group_at(shuffled, 3) is None
