"""Template revisions: what is revisioned, the revision key, ControllerRevision objects, and
whether a stored revision matches the current spec.

Only ``leaderWorkerTemplate`` and ``networkConfig`` are revisioned (upstream's
pkg/utils/revision/revision_utils.go, getPatch): changing them rolls every group; changing replicas,
the rollout strategy or the startup policy does not.
The content is stored as upstream stores it, a patch
``{"spec": {"leaderWorkerTemplate": {..., "$patch": "replace"}, "networkConfig": {...}}}``,
and the key is FNV-1 (32 bit) of the content, printed in decimal and re-encoded with
Kubernetes' SafeEncodeString alphabet.

Revisions written by another controller (upstream LWS) serialise the same content differently
(Go zero values such as ``"resources": {}`` or ``"creationTimestamp": null``), so matching is
semantic: both sides are normalised before they are compared, and a match keeps the existing
key, so taking over such objects restarts nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lws_operator.api import constants as c
from lws_operator.api.models import (
    LeaderWorkerSet,
    LeaderWorkerSetSpec,
    LeaderWorkerTemplate,
    NetworkConfig,
)
from lws_operator.plan.events import CREATE, CREATING_REVISION, Event, normal
from lws_operator.plan.keys import RevisionKey
from lws_operator.plan.meta import controller_ref, is_controlled_by, labels_of, meta_of, name_of

Obj = Mapping[str, Any]

_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_FNV32_OFFSET = 0x811C9DC5
_FNV32_PRIME = 0x01000193
# A ControllerRevision name is <lws>-<key>-<number>; upstream truncates the LWS name to 220.
_NAME_PREFIX_MAX = 220


# Controller policy, not what the pods are made from: changing them rolls no group, and a
# stored revision matches with or without them (docs/compatibility.md F6).
_NOT_REVISIONED = {
    "leaderWorkerTemplate": ("maxGroupRestarts",),
    "networkConfig": ("publishNotReadyAddresses",),
}


def _revisioned(part: str, value: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in value.items() if k not in _NOT_REVISIONED[part]}


def revision_content(spec: LeaderWorkerSetSpec) -> dict[str, Any]:
    """The revisioned part of ``spec``, as a patch that replaces it wholesale."""
    template = _revisioned("leaderWorkerTemplate", spec.leader_worker_template.to_dict())
    network = _revisioned("networkConfig", spec.network_config.to_dict())
    return {
        "spec": {
            "leaderWorkerTemplate": {**template, "$patch": "replace"},
            "networkConfig": {**network, "$patch": "replace"},
        }
    }


def content_bytes(content: dict[str, Any]) -> bytes:
    return json.dumps(content, sort_keys=True, separators=(",", ":")).encode()


def fnv1_32(data: bytes) -> int:
    """FNV-1 (not FNV-1a: multiply, then xor), as Go's hash/fnv.New32."""
    h = _FNV32_OFFSET
    for byte in data:
        h = (h * _FNV32_PRIME) & 0xFFFFFFFF
        h ^= byte
    return h


def safe_encode(s: str) -> str:
    """k8s.io/apimachinery/pkg/util/rand.SafeEncodeString: no vowels, no ambiguous digits."""
    return "".join(_SAFE_ALPHABET[ord(ch) % len(_SAFE_ALPHABET)] for ch in s)


def revision_key(spec: LeaderWorkerSetSpec) -> RevisionKey:
    return RevisionKey(safe_encode(str(fnv1_32(content_bytes(revision_content(spec))))))


def revision_key_of(obj: Obj | None) -> RevisionKey | None:
    """The revision an object was made from (its template-revision-hash label), if any."""
    key = labels_of(obj).get(c.REVISION_KEY)
    return None if key is None else RevisionKey(key)


def revision_name(lws_name: str, key: str, number: int) -> str:
    return f"{lws_name[:_NAME_PREFIX_MAX]}-{key}-{number}"


def _pruned(value: Any) -> Any:
    """Drop what serialisers disagree on: null, empty objects and empty lists, and the
    ``$patch`` directive."""
    if isinstance(value, dict):
        out = {k: _pruned(v) for k, v in value.items() if k != "$patch"}
        return {k: v for k, v in out.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def _normal_form(spec_part: dict[str, Any]) -> Any:
    """A stored or current ``{"leaderWorkerTemplate": …, "networkConfig": …}``, with the API's
    defaults filled in and serialisation noise removed."""
    template = LeaderWorkerTemplate.model_validate(
        _pruned(spec_part.get("leaderWorkerTemplate") or {})
    )
    network = NetworkConfig.model_validate(_pruned(spec_part.get("networkConfig") or {}))
    return _pruned(
        {
            "leaderWorkerTemplate": _revisioned("leaderWorkerTemplate", template.to_dict()),
            "networkConfig": _revisioned("networkConfig", network.to_dict()),
        }
    )


def matches(revision: dict[str, Any], spec: LeaderWorkerSetSpec) -> bool:
    """Does the ControllerRevision ``revision`` hold the revisioned part of ``spec``?"""
    stored = ((revision.get("data") or {}).get("spec")) or {}
    if not isinstance(stored, dict) or "leaderWorkerTemplate" not in stored:
        return False
    try:
        return bool(_normal_form(stored) == _normal_form(revision_content(spec)["spec"]))
    except ValueError:  # a stored template our model cannot read is not a match
        return False


def spec_at_revision(spec: LeaderWorkerSetSpec, revision: dict[str, Any]) -> LeaderWorkerSetSpec:
    """``spec`` with its revisioned part replaced by what ``revision`` recorded: what the groups
    of that revision were built from (size, templates, subgroups, network config)."""
    stored = (revision.get("data") or {}).get("spec") or {}
    current = spec.to_dict()
    for key in ("leaderWorkerTemplate", "networkConfig"):
        if isinstance(stored.get(key), dict):
            live = {k: current[key][k] for k in _NOT_REVISIONED[key] if k in current.get(key, {})}
            current[key] = {
                **_revisioned(key, {k: v for k, v in stored[key].items() if k != "$patch"}),
                **live,
            }
    return LeaderWorkerSetSpec.model_validate(current)


def controller_revision(
    *,
    lws_name: str,
    namespace: str,
    lws_uid: str,
    key: RevisionKey,
    number: int,
    content: dict[str, Any],
) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "name": revision_name(lws_name, key, number),
            "namespace": namespace,
            "labels": {c.SET_NAME_LABEL: lws_name, c.REVISION_KEY: key},
            "ownerReferences": [controller_ref(c.API_VERSION, c.KIND, lws_name, lws_uid)],
        },
        "data": content,
        "revision": number,
    }


def own_revisions(revisions: Mapping[str, Obj], lws_uid: str) -> list[Obj]:
    """The LWS's revisions: those it controls, and unowned ones (a predecessor's) with its
    name label."""
    return [
        r
        for r in revisions.values()
        if meta_of(r).get("ownerReferences") in (None, []) or is_controlled_by(r, lws_uid)
    ]


def revision_with_key(revisions: Mapping[str, Obj], key: str) -> Obj | None:
    return next((r for r in revisions.values() if labels_of(r).get(c.REVISION_KEY) == key), None)


@dataclass(frozen=True)
class RevisionChoice:
    key: RevisionKey
    """The revision the groups should run."""
    changed: bool
    """It differs from the leader StatefulSet's: a rollout starts ("lwsUpdated")."""
    create: dict[str, Any] | None = None
    """A ControllerRevision to create first (with ``note`` for its CreatingRevision event)."""
    note: str = ""


def choose_revision(
    lws: LeaderWorkerSet,
    *,
    leader_sts: Obj | None,
    revisions: Mapping[str, Obj],
    matches: Callable[[Obj], bool],
) -> RevisionChoice:
    """The revision for the current spec (upstream's getOrCreateRevisionIfNonExist and
    getUpdatedRevision, pkg/controllers/leaderworkerset_controller.go): the leader StatefulSet's
    when one of its revisions holds the spec; else any revision holding it (ours or a predecessor's,
    whose key is kept); else a new one. A leader StatefulSet whose key has no revision at all
    (another controller kept none) gets the current spec recorded under that key, so nothing rolls.
    ``matches`` tells whether a revision holds the current spec."""
    uid = str(lws.metadata.get("uid", ""))
    owned = own_revisions(revisions, uid)
    by_key: dict[RevisionKey, list[Obj]] = {}
    for r in owned:
        by_key.setdefault(revision_key_of(r) or RevisionKey(""), []).append(r)
    number = 1 + max((int(r.get("revision") or 0) for r in owned), default=0)

    def new(key: RevisionKey, note: str) -> dict[str, Any]:
        return controller_revision(
            lws_name=lws.name,
            namespace=lws.namespace,
            lws_uid=uid,
            key=key,
            number=number,
            content=revision_content(lws.spec),
        )

    sts_key = revision_key_of(leader_sts) if leader_sts is not None else None
    if sts_key is not None and sts_key in by_key:
        if any(matches(r) for r in by_key[sts_key]):
            return RevisionChoice(sts_key, changed=False)
    elif sts_key is not None:
        note = f"Creating missing revision with key {sts_key}"
        return RevisionChoice(sts_key, False, new(sts_key, note), note)
    for key, held in by_key.items():
        if any(matches(r) for r in held):
            return RevisionChoice(key, changed=sts_key is not None and key != sts_key)
    key = revision_key(lws.spec)
    note = (
        f"Creating revision with key {key} for updated LWS"
        if leader_sts is not None
        else f"Creating revision with key {key} for a newly created LeaderWorkerSet"
    )
    return RevisionChoice(key, sts_key is not None and key != sts_key, new(key, note), note)


def revisions_to_delete(
    revisions: Mapping[str, Obj], *, key: RevisionKey, lws_uid: str
) -> list[str]:
    """Names of the LWS's revisions other than ``key``'s, once an update is complete (only
    those it controls: never a predecessor's unowned ones)."""
    return [
        name_of(r)
        for r in revisions.values()
        if labels_of(r).get(c.REVISION_KEY) != key and is_controlled_by(r, lws_uid)
    ]


def creating_revision(note: str) -> Event:
    return normal(CREATING_REVISION, CREATE, note)
