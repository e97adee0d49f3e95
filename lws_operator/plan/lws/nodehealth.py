"""Groups with a pod on a node that is not healthy (issue 16, item 4).

A node that became NotReady or unreachable is reported per group (an Event, ``kubectl lws
status``) as soon as it is seen, before anything is deleted. Nothing is done to the pods for
it: the group is recovered per its restart policy once Kubernetes marks the pod Failed or
deletes it (taint-based eviction, the pod garbage collector), and a pod stuck terminating
there is force-deleted only as compatibility C10 says (plan/lws/restart.py ``stuck_pods``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from lws_operator.plan.events import Event, warning
from lws_operator.plan.lws.groups import Group, where
from lws_operator.plan.meta import name_of, uid_of

Obj = Mapping[str, Any]

NODE_NOT_READY = "GroupNodeNotReady"
# The taints the node lifecycle controller sets (and out-of-service, set by an administrator).
UNHEALTHY_TAINTS = (
    "node.kubernetes.io/unreachable",
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/out-of-service",
)


def node_state(node: Obj | None) -> str | None:
    """Why a node cannot run its pods, or None when it is healthy."""
    if node is None:
        return "gone"
    taints = {t.get("key") for t in (node.get("spec") or {}).get("taints") or []}
    if "node.kubernetes.io/out-of-service" in taints:
        return "out of service"
    ready = next(
        (x for x in (node.get("status") or {}).get("conditions") or [] if x.get("type") == "Ready"),
        None,
    )
    if ready is None or ready.get("status") == "Unknown":
        return "unreachable (Ready=Unknown)"
    if ready.get("status") != "True":
        return "NotReady"
    if "node.kubernetes.io/unreachable" in taints:
        return "unreachable"
    if "node.kubernetes.io/not-ready" in taints:
        return "NotReady"
    return None


@dataclass(frozen=True)
class NodeProblem:
    group: int
    pod: str
    pod_uid: str
    node: str
    state: str

    @property
    def text(self) -> str:
        return f"pod {self.pod} on node {self.node}: {self.state}"

    @property
    def event(self) -> Event:
        return warning(
            NODE_NOT_READY,
            "Report",
            f"group {self.group}: {self.text}; the group is recovered per its restart policy "
            "once Kubernetes marks the pod failed or deletes it",
        )


def node_problems(
    groups: Sequence[Group], nodes: Mapping[str, Obj], healthy: AbstractSet[str] = frozenset()
) -> list[NodeProblem]:
    """Each member pod, of every group, bound to a node that is not healthy. ``healthy`` are
    nodes known healthy (the cache keeps them from node events): a group on those alone is
    passed without a look (see below), so a pass at rest judges no node. Each other node is
    judged once, and only the members of a group with a node not healthy are looked at."""
    states: dict[str, str | None] = {}
    judged: dict[frozenset[str], bool] = {}  # groups share their nodes

    def state_of(name: str) -> str | None:
        if name not in states:
            states[name] = node_state(nodes.get(name))
        return states[name]

    out = []
    known = frozenset(healthy)
    # The groups on other nodes are kept as groups change (plan/lws/groups.py), per set of
    # healthy nodes: a pass at rest looks at no group.
    for group in where(groups, ("off healthy nodes", known), lambda g: not g.nodes <= known):
        if (ok := judged.get(group.nodes)) is None:
            ok = judged[group.nodes] = all(state_of(name) is None for name in group.nodes)
        if ok:
            continue
        for pod in group.members:
            node_name = (pod.get("spec") or {}).get("nodeName")
            if node_name and (state := state_of(str(node_name))) is not None:
                out.append(
                    NodeProblem(group.index, name_of(pod), uid_of(pod), str(node_name), state)
                )
    return out
