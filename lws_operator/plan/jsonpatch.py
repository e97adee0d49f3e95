"""The RFC 6902 JSON patch an admission webhook returns: it turns the object received into the
mutated one.

Objects are diffed key by key, so a patch never replaces what it does not change (other
admission plugins may have set it). Lists are diffed item by item when their lengths match and
replaced whole otherwise (an env list that gained entries is one ``replace``).
"""

from __future__ import annotations

from typing import Any


def admission_patch(original: dict[str, Any], mutated: dict[str, Any]) -> list[dict[str, Any]]:
    """Operations that turn ``original`` into ``mutated``; [] when they are equal."""
    ops: list[dict[str, Any]] = []
    _diff(original, mutated, "", ops)
    return ops


def pointer_token(key: str | int) -> str:
    """One JSON pointer segment (RFC 6901): ``~`` becomes ``~0``, then ``/`` becomes ``~1``."""
    return str(key).replace("~", "~0").replace("/", "~1")


def _diff(old: Any, new: Any, path: str, ops: list[dict[str, Any]]) -> None:
    if _same(old, new):
        return
    if isinstance(old, dict) and isinstance(new, dict):
        for key in old:
            if key not in new:
                ops.append({"op": "remove", "path": f"{path}/{pointer_token(key)}"})
        for key, value in new.items():
            child = f"{path}/{pointer_token(key)}"
            if key in old:
                _diff(old[key], value, child, ops)
            else:
                ops.append({"op": "add", "path": child, "value": value})
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (old_item, new_item) in enumerate(zip(old, new, strict=True)):
            _diff(old_item, new_item, f"{path}/{i}", ops)
    else:
        ops.append({"op": "replace", "path": path, "value": new})


def _same(old: Any, new: Any) -> bool:
    # JSON tells true from 1 and 1 from 1.0 (so do the API server's schemas); Python's == does not.
    if type(old) is not type(new):
        return False
    if isinstance(old, dict):
        return old.keys() == new.keys() and all(_same(old[k], new[k]) for k in old)
    if isinstance(old, list):
        return len(old) == len(new) and all(_same(a, b) for a, b in zip(old, new, strict=True))
    return bool(old == new)
