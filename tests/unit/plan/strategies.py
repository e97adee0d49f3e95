"""Hypothesis strategies: LWS pods as their StatefulSets create them, and corrupted ones."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

from lws_operator.api import constants as c
from lws_operator.plan.lws.pod_mutation import LWS_ENV_NAMES
from tests.unit.plan import pods

ENV_NAMES = st.sampled_from([*LWS_ENV_NAMES, "A", "B", "C", c.TPU_PROCESS_PORT, "PATH"])
json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def env_lists(draw: st.DrawFn) -> list[dict[str, Any]]:
    entries = draw(st.lists(st.tuples(ENV_NAMES, st.text(max_size=5)), max_size=6))
    return [
        {"name": name, "value": "8470" if name == c.TPU_PROCESS_PORT else value}
        for name, value in entries
    ]


@st.composite
def containers(draw: st.DrawFn, prefix: str) -> list[dict[str, Any]]:
    count = draw(st.integers(0 if prefix == "i" else 1, 3))
    return [
        pods.container(
            f"{prefix}{i}",
            tpus=draw(st.sampled_from([None, None, "0", "1", "4"])),
            env=draw(st.none() | env_lists()),
        )
        for i in range(count)
    ]


@st.composite
def lws_pods(draw: st.DrawFn) -> dict[str, Any]:
    """A leader or worker pod of a valid LWS, before the webhook."""
    size = draw(st.integers(1, 12))
    group = draw(st.integers(0, 20))
    annotations: dict[str, str] = {}
    if size > 1 and draw(st.booleans()):
        policy = draw(st.sampled_from(["LeaderWorker", "LeaderExcluded"]))
        valid = [
            sg
            for sg in range(1, size + 1)
            if (size % sg == 0 or (size - 1) % sg == 0)
            and (policy == "LeaderWorker" or (size - 1) % sg == 0)
        ]
        annotations[c.SUBGROUP_SIZE_ANNOTATION] = str(draw(st.sampled_from(valid)))
        annotations[c.SUBGROUP_POLICY_TYPE_ANNOTATION] = policy
        if draw(st.booleans()):
            annotations[c.SUBGROUP_EXCLUSIVE_KEY_ANNOTATION] = draw(
                st.sampled_from(["zone", "rack"])
            )
    if draw(st.booleans()):
        annotations[c.EXCLUSIVE_KEY_ANNOTATION] = draw(st.sampled_from(["zone", "pool"]))
    unique = draw(st.booleans())
    if unique:
        annotations[c.SUBDOMAIN_POLICY_ANNOTATION] = "UniquePerReplica"
    leader_name = f"lws-{group}"
    kw: dict[str, Any] = {
        "containers": draw(containers("c")),
        "init_containers": draw(containers("i")),
        "subdomain": leader_name if unique else "lws",
        "lws": "lws",
    }
    worker = draw(st.integers(0, size - 1))
    if worker == 0:
        return pods.leader(leader_name, size, annotations=annotations, **kw)
    if draw(st.booleans()):
        annotations[c.LEADER_REQUESTS_TPUS_ANNOTATION] = "true"
    return pods.worker(f"{leader_name}-{worker}", size, group, annotations=annotations, **kw)


@st.composite
def corrupted_pods(draw: st.DrawFn) -> Any:
    """An LWS pod with one value somewhere replaced or removed, or arbitrary JSON."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.dictionaries(st.sampled_from(["metadata", "spec", "x"]), json_values))
    pod = copy.deepcopy(draw(lws_pods()))
    for _ in range(draw(st.integers(1, 3))):
        node: Any = pod
        while isinstance(node, dict | list) and node and draw(st.booleans()):
            keys = list(node) if isinstance(node, dict) else list(range(len(node)))
            key = draw(st.sampled_from(keys))
            if not isinstance(node[key], dict | list) or not node[key] or draw(st.booleans()):
                if isinstance(node, dict) and draw(st.booleans()):
                    del node[key]
                else:
                    node[key] = draw(json_values)
                break
            node = node[key]
    return pod
