"""Test data for the LeaderWorkerSet API, shared by unit and cluster tests: the admission
cases of ``lws_cases.yaml`` and a hypothesis strategy for LeaderWorkerSet objects that
crowds the edges of every validation rule.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from lws_operator.api import constants as c

CASES_FILE = Path(__file__).with_name("lws_cases.yaml")
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"


def base_object(name: str) -> dict[str, Any]:
    """A valid LeaderWorkerSet: 2 groups of 2 pods."""
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.KIND,
        "metadata": {"name": name},
        "spec": {
            "replicas": 2,
            "leaderWorkerTemplate": {
                "size": 2,
                "workerTemplate": {
                    "spec": {"containers": [{"name": "main", "image": PAUSE_IMAGE}]}
                },
            },
        },
    }


# What the API server stores for an LWS created with only a worker template
# (upstream's CRD defaults, api/leaderworkerset/v1/leaderworkerset_types.go, plus the
# mutating webhook's, Default in pkg/webhooks/leaderworkerset_webhook.go).
UPSTREAM_DEFAULT_SPEC: dict[str, Any] = {
    "replicas": 1,
    "leaderWorkerTemplate": {
        "size": 1,
        "restartPolicy": "RecreateGroupOnPodRestart",
    },
    "rolloutStrategy": {
        "type": "RollingUpdate",
        "rollingUpdateConfiguration": {"partition": 0, "maxUnavailable": 1, "maxSurge": 0},
    },
    "startupPolicy": "LeaderCreated",
    "networkConfig": {"subdomainPolicy": "Shared"},
}


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch (null deletes), on copies."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


@dataclass(frozen=True)
class Case:
    id: str
    obj: dict[str, Any]  # the object created, or the result of the update
    old: dict[str, Any] | None  # the object before the update; None for a create
    patch: dict[str, Any]  # merge patch from old to obj (what an update sends)
    path: str | None = None  # None: the case must be accepted
    message: str | None = None
    server: str | None = None

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    def __str__(self) -> str:
        return self.id


def _name(case_id: str, length: int | None) -> str:
    name = f"lws-{case_id}"
    if length is None:
        return name
    name = (name + "-" + "x" * 100)[:length]
    return name[:-1] + "x" if name.endswith("-") else name


def set_literal(obj: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """``obj`` with each dotted path set to its value as is, ``null`` and ``""`` included
    (which a merge patch cannot express); missing objects on the way are added."""
    out = copy.deepcopy(obj)
    for dotted, value in values.items():
        *parents, leaf = dotted.split(".")
        node = out
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out


def _cases(entry: dict[str, Any]) -> list[Case]:
    expect = {k: entry.get(k) for k in ("path", "message", "server")}
    name = _name(entry["id"], entry.get("name_length"))
    base = base_object(name)
    patch = entry.get("patch") or {}
    if "literal" in entry:  # creates only: an update sends a merge patch, where null deletes
        return [
            Case(
                entry["id"],
                set_literal(merge_patch(base, patch), entry["literal"]),
                None,
                patch,
                **expect,
            )
        ]
    if "old" in entry:
        old = merge_patch(base, entry["old"])
        return [Case(entry["id"], merge_patch(old, patch), old, patch, **expect)]
    out = [Case(entry["id"], merge_patch(base, patch), None, patch, **expect)]
    if entry.get("update", True):
        update_name = _name(entry["id"] + "-u", entry.get("name_length"))
        old = base_object(update_name)
        new = merge_patch(old, patch)
        new["metadata"]["name"] = update_name
        out.append(Case(entry["id"] + "-update", new, old, patch, **expect))
    return out


def load_cases() -> tuple[list[Case], list[Case]]:
    """(invalid, valid) cases, update variants included."""
    data = yaml.safe_load(CASES_FILE.read_text())
    invalid = [case for entry in data["invalid"] for case in _cases(entry)]
    valid = [case for entry in data["valid"] for case in _cases({**entry, "update": False})]
    return invalid, valid


# --- hypothesis ------------------------------------------------------------------------------


def _maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A value, or None meaning "leave the field out"."""
    return st.one_of(st.none(), strategy)


def _mostly(good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``good`` 9 times in 10: each field breaks rarely, so that about half of the generated
    objects are valid and the other half fail one or two rules."""
    return st.integers(0, 9).flatmap(lambda i: bad if i == 0 else good)


_PERCENT = st.sampled_from(["0%", "1%", "25%", "50%", "100%", "0100%"])
_INT_OR_PERCENT = _mostly(
    st.one_of(st.integers(0, 12), _PERCENT),
    st.one_of(st.integers(-2, -1), st.sampled_from(["101%", "200%", "12.5%", "x", "1"])),
)
_LABEL_KEYS = st.sampled_from(["topology.kubernetes.io/rack", "kubernetes.io/hostname", "rack"])
_TOPOLOGY_VALUES = _mostly(_LABEL_KEYS, st.sampled_from(["", "not a key", "a/b/c"]))


@st.composite
def lws_objects(draw: st.DrawFn) -> dict[str, Any]:
    """LeaderWorkerSet objects, valid and invalid, near the boundaries of the rules."""
    name_length = draw(_mostly(st.integers(1, 52), st.integers(45, 56)))
    first = draw(_mostly(st.just("a"), st.just("2")))  # a digit first breaks DNS-1035
    obj = base_object((first + "l" * name_length)[:name_length])
    spec = obj["spec"]
    lwt = spec["leaderWorkerTemplate"]
    _set(
        spec,
        "replicas",
        draw(
            _maybe(
                _mostly(
                    st.one_of(st.integers(0, 12), st.sampled_from([99, 100, 1000000])),
                    st.sampled_from([-1, 1000001]),
                )
            )
        ),
    )
    _set(
        spec,
        "startupPolicy",
        draw(_maybe(_mostly(st.sampled_from(["LeaderCreated", "LeaderReady"]), st.just("Eager")))),
    )
    size = draw(_maybe(_mostly(st.integers(1, 9), st.sampled_from([0, -1, 1000000, 2**31]))))
    _set(lwt, "size", size)
    _set(
        lwt,
        "restartPolicy",
        draw(
            _maybe(
                _mostly(
                    st.sampled_from(["RecreateGroupOnPodRestart", "None", "Default"]),
                    st.just("Never"),
                )
            )
        ),
    )
    ruc = {
        "partition": draw(_maybe(_mostly(st.integers(0, 12), st.just(-1)))),
        "maxUnavailable": draw(_maybe(_INT_OR_PERCENT)),
        "maxSurge": draw(_maybe(_INT_OR_PERCENT)),
    }
    ruc = {k: v for k, v in ruc.items() if v is not None}
    if ruc or draw(st.booleans()):
        spec["rolloutStrategy"] = {"rollingUpdateConfiguration": ruc}
    if draw(st.integers(0, 3)) == 0:
        subgroups = {}
        sg = draw(_mostly(st.sampled_from([1, 2, 3]), st.sampled_from([None, 0, -1, 4])))
        _set(subgroups, "subGroupSize", sg)
        kind = draw(_maybe(st.sampled_from(["LeaderWorker", "LeaderExcluded"])))
        _set(subgroups, "subGroupPolicyType", kind)
        lwt["subGroupPolicy"] = subgroups
    policy = draw(_maybe(st.sampled_from(["Shared", "UniquePerReplica"])))
    if policy is not None:
        spec["networkConfig"] = {"subdomainPolicy": policy}
    annotations = {}
    if draw(st.integers(0, 3)) == 0:
        annotations[c.EXCLUSIVE_KEY_ANNOTATION] = draw(_TOPOLOGY_VALUES)
    if draw(st.integers(0, 1 if "subGroupPolicy" in lwt else 11)) == 0:
        annotations[c.SUBGROUP_EXCLUSIVE_KEY_ANNOTATION] = draw(_TOPOLOGY_VALUES)
    if annotations:
        obj["metadata"]["annotations"] = annotations
    return obj


def _set(target: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        target[key] = value
