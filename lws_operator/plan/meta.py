"""Object metadata shared by everything the operator creates: owner references."""

from __future__ import annotations

from typing import Any


def controller_ref(api_version: str, kind: str, name: str, uid: str) -> dict[str, Any]:
    """A controller owner reference: the garbage collector deletes the object with its owner,
    and (blockOwnerDeletion) a foreground delete of the owner waits for it."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def controller_of(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The controller owner reference of ``obj``, if any."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller"):
            return ref
    return None


def is_controlled_by(obj: dict[str, Any], uid: str) -> bool:
    ref = controller_of(obj)
    return ref is not None and ref.get("uid") == uid
