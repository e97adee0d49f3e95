"""Template revisions: what is revisioned, the revision key, ControllerRevision objects, and
whether a stored revision matches the current spec.

Only ``leaderWorkerTemplate`` and ``networkConfig`` are revisioned (contract 3.4): changing them
rolls every group; changing replicas, the rollout strategy or the startup policy does not.
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
from typing import Any

from lws_operator.api import constants as c
from lws_operator.api.models import LeaderWorkerSetSpec, LeaderWorkerTemplate, NetworkConfig
from lws_operator.plan.meta import controller_ref

_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_FNV32_OFFSET = 0x811C9DC5
_FNV32_PRIME = 0x01000193
# A ControllerRevision name is <lws>-<key>-<number>; upstream truncates the LWS name to 220.
_NAME_PREFIX_MAX = 220


def revision_content(spec: LeaderWorkerSetSpec) -> dict[str, Any]:
    """The revisioned part of ``spec``, as a patch that replaces it wholesale."""
    template = spec.leader_worker_template.to_dict()
    network = spec.network_config.to_dict()
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


def revision_key(spec: LeaderWorkerSetSpec) -> str:
    return safe_encode(str(fnv1_32(content_bytes(revision_content(spec)))))


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
    return _pruned({"leaderWorkerTemplate": template.to_dict(), "networkConfig": network.to_dict()})


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
            current[key] = {k: v for k, v in stored[key].items() if k != "$patch"}
    return LeaderWorkerSetSpec.model_validate(current)


def controller_revision(
    *,
    lws_name: str,
    namespace: str,
    lws_uid: str,
    key: str,
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
