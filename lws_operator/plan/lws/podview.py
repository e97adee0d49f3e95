"""Checked access to a pod given as a plain dict, for the pod mutation.

The pod may be hand-written: any key may be missing, null or of the wrong type. Every read here
either returns a value of the expected type or raises :class:`PodMutationError` naming the pod
and the field, so the mutation never fails with an unrelated exception.
"""

from __future__ import annotations

import re
from typing import Any, NoReturn

from lws_operator.api.constants import MAX_INT32
from lws_operator.plan.meta import meta_of

# Decimal digits only (no sign, no spaces, no "_" and no non-ASCII digits, which int() would
# take); ten digits bound the value before int() runs.
_UNSIGNED = re.compile(r"[0-9]{1,10}")


class PodMutationError(ValueError):
    """The pod cannot be mutated; the message names the pod and the offending field."""


class PodView:
    """Wraps the pod dict being mutated (a private copy: accessors create missing parents)."""

    def __init__(self, pod: dict[str, Any]) -> None:
        self.pod = pod
        name = meta_of(pod).get("name")
        self._ref = name if isinstance(name, str) and name else "(unnamed)"

    def fail(self, field: str, problem: str) -> NoReturn:
        raise PodMutationError(f"pod {self._ref}: {field} {problem}")

    # --- Generic structure -------------------------------------------------------------------

    def mapping(self, *path: str, create: bool = False) -> dict[str, Any] | None:
        """The object at ``path``; a missing or null one is None, or a new {} with ``create``."""
        node: dict[str, Any] = self.pod
        for depth, key in enumerate(path):
            child = node.get(key)
            if child is None:
                if not create:
                    return None
                child = node[key] = {}
            elif not isinstance(child, dict):
                self.fail(".".join(path[: depth + 1]), f"must be an object, not {_kind(child)}")
            node = child
        return node

    def ensure(self, *path: str) -> dict[str, Any]:
        """The object at ``path``, created (with its parents) when missing or null."""
        node = self.mapping(*path, create=True)
        assert node is not None  # create=True never returns None
        return node

    def array(self, *path: str, create: bool = False) -> list[Any]:
        """The list at ``path``; a missing or null one is [] (stored when ``create``)."""
        parent = self.mapping(*path[:-1], create=create)
        value = None if parent is None else parent.get(path[-1])
        if value is None:
            value = []
            if parent is not None and create:
                parent[path[-1]] = value
        elif not isinstance(value, list):
            self.fail(".".join(path), f"must be a list, not {_kind(value)}")
        return value

    def string(self, obj: dict[str, Any], key: str, field: str) -> str | None:
        """``obj[key]``, which must be a string when present and not null."""
        value = obj.get(key)
        if value is None or isinstance(value, str):
            return value
        self.fail(field, f"must be a string, not {_kind(value)}")

    def unsigned(self, raw: str, field: str, *, minimum: int = 0) -> int:
        """``raw`` as a decimal integer in [minimum, 2^31-1]."""
        if _UNSIGNED.fullmatch(raw) is None or not minimum <= int(raw) <= MAX_INT32:
            shown = raw if len(raw) <= 40 else raw[:40] + "..."
            self.fail(field, f"must be an integer from {minimum} to {MAX_INT32}, got {shown!r}")
        return int(raw)

    # --- Metadata ---------------------------------------------------------------------------

    def required_meta(self, key: str, hint: str) -> str:
        value = self.string(self.mapping("metadata") or {}, key, f"metadata.{key}")
        if not value:
            self.fail(f"metadata.{key}", f"is missing; {hint}")
        return value

    def label(self, key: str) -> str | None:
        labels = self.mapping("metadata", "labels") or {}
        return self.string(labels, key, f"label {key}")

    def annotation(self, key: str) -> str | None:
        annotations = self.mapping("metadata", "annotations") or {}
        return self.string(annotations, key, f"annotation {key}")

    def set_label(self, key: str, value: str) -> None:
        self.ensure("metadata", "labels")[key] = value

    def set_annotation(self, key: str, value: str) -> None:
        self.ensure("metadata", "annotations")[key] = value

    def subdomain(self) -> str:
        """``spec.subdomain``, "" when unset (then DNS names come out incomplete, as upstream)."""
        return self.string(self.mapping("spec") or {}, "subdomain", "spec.subdomain") or ""

    # --- Containers -------------------------------------------------------------------------

    def containers(self) -> list[tuple[str, dict[str, Any]]]:
        """``(field path, container)`` for every container, then every init container.
        Ephemeral containers are never touched (upstream's AddLWSVariables, pod_utils.go)."""
        found = []
        for kind in ("containers", "initContainers"):
            for i, container in enumerate(self.array("spec", kind)):
                field = f"spec.{kind}[{i}]"
                if not isinstance(container, dict):
                    self.fail(field, f"must be an object, not {_kind(container)}")
                found.append((field, container))
        return found

    def env(self, container: dict[str, Any], field: str) -> list[dict[str, Any]]:
        """The container's env entries, each an object with a string name."""
        env = container.get("env")
        if env is None:
            return []
        if not isinstance(env, list):
            self.fail(f"{field}.env", f"must be a list, not {_kind(env)}")
        for i, entry in enumerate(env):
            if not isinstance(entry, dict):
                self.fail(f"{field}.env[{i}]", f"must be an object, not {_kind(entry)}")
            if not isinstance(entry.get("name"), str):
                self.fail(f"{field}.env[{i}].name", "must be a string")
        return env

    def env_value(self, container: dict[str, Any], field: str, name: str) -> str | None:
        """The value of the first entry called ``name`` ("" when it uses valueFrom), or None."""
        for i, entry in enumerate(self.env(container, field)):
            if entry["name"] == name:
                return self.string(entry, "value", f"{field}.env[{i}].value") or ""
        return None


def _kind(value: Any) -> str:
    kinds = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if type(value) in kinds:
        return kinds[type(value)]
    return "a number" if isinstance(value, int | float) else type(value).__name__
