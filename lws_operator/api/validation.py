"""Offline validation of LeaderWorkerSet objects: the verdicts and messages of the API server.

First the object is taken as the API server takes it before validating: nulls dropped (no
field of the CRD is nullable, so the server prunes them and applies the defaults instead) and
Go's zero values replaced as the MutatingAdmissionPolicy does. Then the layers, in the order
the API server applies them: the schema (pydantic types, enums and
required fields, plus unknown fields as ``kubectl --validate=strict`` reports them), the CRD
rules, then the admission-policy rules. The rules themselves are in
:mod:`lws_operator.api.rules`.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from pydantic import BaseModel, ValidationError

from lws_operator.api import constants as c
from lws_operator.api.admission_policy import ZERO_VALUE_DEFAULTS
from lws_operator.api.crd import open_api_schema
from lws_operator.api.models import LeaderWorkerSet
from lws_operator.api.rules import RULES, Rule
from lws_operator.api.types import ApiModel


@dataclass(frozen=True)
class FieldError:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


def validate(obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[FieldError]:
    """Errors the API server would report for creating ``obj`` (or updating ``old`` to it).

    The API server stops before the validation rules when a type or enum is wrong, and before
    the admission policy when the CRD rejects the object; here every layer is reported at once,
    so one run lists everything to fix. (Accept or reject is the same either way.)
    """
    obj = as_admitted(obj)
    old = as_admitted(old) if old is not None else None
    errors = _envelope_errors(obj)
    lws, schema_errors = _parse(_with_generated_name(obj))
    broken = {e.path for e in schema_errors}
    errors += schema_errors + [e for e in structural_errors(obj) if e.path not in broken]
    if lws is None:
        return errors
    old_lws = _parse(old)[0] if old is not None else None
    for rule in RULES:
        if not any(rule.path == p or rule.path.startswith(p + ".") for p in broken):
            errors += _run_rule(rule, lws, old_lws)
    return errors


def as_admitted(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` as the API server has it when it validates: every ``null`` in an object dropped
    (nulls inside lists stay, and are refused), then ``""`` stored as upstream stores it where
    the MutatingAdmissionPolicy does so."""
    out: dict[str, Any] = _without_nulls(obj)
    for path, default in ZERO_VALUE_DEFAULTS:
        *parents, leaf = path
        node: Any = out
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and node.get(leaf) == "":
            node[leaf] = default
    return out


def _without_nulls(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _parse(obj: Mapping[str, Any]) -> tuple[LeaderWorkerSet | None, list[FieldError]]:
    """Parse, collecting schema errors; wrong values are dropped (so defaults apply) and
    missing objects are added empty, until what is left parses, for the rules to check."""
    data: Any = copy.deepcopy(dict(obj))
    errors: list[FieldError] = []
    for _ in range(8):
        try:
            return LeaderWorkerSet.model_validate(data), errors
        except ValidationError as e:
            for err in e.errors():
                errors.append(_from_pydantic(err))
                _repair(data, tuple(err["loc"]), missing=err["type"] == "missing")
    return None, errors


def _repair(data: Any, loc: tuple[int | str, ...], *, missing: bool) -> None:
    for part in loc[:-1]:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return
    if not isinstance(data, dict):
        return
    if missing:
        data[loc[-1]] = {}
    else:
        data.pop(loc[-1], None)


def _run_rule(rule: Rule, lws: LeaderWorkerSet, old: LeaderWorkerSet | None) -> list[FieldError]:
    node = _at(lws, rule.scope)
    if node is None:
        return []
    old_node = _at(old, rule.scope) if old is not None else None
    if rule.transition == "update" and old_node is None:
        return []
    if (
        rule.target == "crd"
        and rule.transition == "none"
        and old_node is not None
        and _dump(node) == _dump(old_node)
    ):
        return []  # CRD validation ratcheting: an unchanged value is not re-checked
    message = rule.check(node, old_node)
    return [] if message is None else [FieldError(rule.path, message)]


def _envelope_errors(obj: Mapping[str, Any]) -> list[FieldError]:
    errors = []
    if obj.get("apiVersion") != c.API_VERSION:
        errors.append(FieldError("apiVersion", f"must be {c.API_VERSION}"))
    if obj.get("kind") != c.KIND:
        errors.append(FieldError("kind", f"must be {c.KIND}"))
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping) or not (meta.get("name") or meta.get("generateName")):
        errors.append(
            FieldError("metadata.name", "Required value: name or generateName is required")
        )
    return errors


def _with_generated_name(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """The API server appends 5 random characters to generateName before validating."""
    meta = obj.get("metadata")
    if isinstance(meta, Mapping) and not meta.get("name") and meta.get("generateName"):
        return {**obj, "metadata": {**meta, "name": f"{meta['generateName']}xxxxx"}}
    return obj


def _dump(value: Any) -> Any:
    return value.to_dict() if isinstance(value, ApiModel) else value


def _at(model: Any, path: tuple[str, ...]) -> Any:
    """The value at a JSON path (camelCase names) of a parsed model; None when absent."""
    for name in path:
        if not isinstance(model, BaseModel):
            return None
        attr = next(
            (k for k, f in type(model).model_fields.items() if (f.alias or k) == name), None
        )
        if attr is None:
            return None
        model = getattr(model, attr)
    return model


def _loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out


def _from_pydantic(err: Any) -> FieldError:
    """A pydantic error in the API server's words."""
    kind, path = err["type"], _loc(tuple(err["loc"]))
    value = err.get("input")
    if kind == "missing":
        return FieldError(path, "Required value")
    if kind.startswith("int_or_string"):  # ours, already in the API server's words
        return FieldError(path, str(err["msg"]))
    if kind == "enum":
        allowed = re.findall(r"'([^']*)'", str(err.get("ctx", {}).get("expected", "")))
        listed = ", ".join(f'"{a}"' for a in allowed)
        return FieldError(path, f"Unsupported value: {_json(value)}: supported values: {listed}")
    if kind in ("greater_than_equal", "less_than_equal"):
        return FieldError(path, "Invalid value: must be of type integer with format int32")
    if kind.startswith("int_"):
        return FieldError(path, "Invalid value: must be of type integer")
    if kind.startswith("string_"):
        return FieldError(path, "Invalid value: must be of type string")
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return FieldError(path, "Invalid value: must be of type object")
    if kind == "list_type":
        return FieldError(path, "Invalid value: must be of type array")
    return FieldError(path, str(err["msg"]))


def _json(value: Any) -> str:
    """A value as the API server prints it (JSON: ``null``, never Python's ``None``)."""
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return json.dumps(str(value))


def structural_errors(obj: Mapping[str, Any]) -> list[FieldError]:
    """Unknown fields (which the API server drops and ``kubectl`` reports as errors by
    default), missing required fields and wrong types, anywhere in the object: this is what
    checks the pod templates and PVC templates, which the models keep as plain dicts."""
    errors: list[FieldError] = []
    _walk(obj, _schema(), "", errors)
    return errors


@cache
def _schema() -> Mapping[str, Any]:
    return open_api_schema()


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}


def _type_error(value: Any, schema: Mapping[str, Any]) -> str | None:
    if schema.get("x-kubernetes-int-or-string"):
        ok = isinstance(value, int | str) and not isinstance(value, bool)
        return None if ok else "Invalid value: must be an integer or a string"
    expected = schema.get("type")
    if expected not in _JSON_TYPES:
        return None
    wrong_bool = isinstance(value, bool) and expected != "boolean"
    if wrong_bool or not isinstance(value, _JSON_TYPES[expected]):
        return f"Invalid value: must be of type {expected}"
    return None


def _value_error(value: Any, schema: Mapping[str, Any]) -> str | None:
    if not isinstance(value, str):
        return None
    pattern = schema.get("pattern")
    if pattern is not None and re.search(pattern, value) is None:
        return f"Invalid value: should match '{pattern}'"
    max_length = schema.get("maxLength")
    if max_length is not None and len(value) > max_length:
        return f"Too long: may not be more than {max_length} bytes"
    return None


def _walk(value: Any, schema: Mapping[str, Any], path: str, out: list[FieldError]) -> None:
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return
    problem = _type_error(value, schema) or _value_error(value, schema)
    if problem is not None:
        out.append(FieldError(path, problem))
        return
    if isinstance(value, Mapping):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key in schema.get("required", ()):
            if key not in value:
                out.append(FieldError(f"{path}.{key}" if path else key, "Required value"))
        for key, item in value.items():
            child = f"{path}.{key}" if path else str(key)
            if props is not None and key in props:
                _walk(item, props[key], child, out)
            elif isinstance(extra, Mapping):
                _walk(item, extra, child, out)
            elif props is not None and path != "metadata":
                out.append(FieldError(child, "unknown field"))
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for i, item in enumerate(value):
            _walk(item, schema["items"], f"{path}[{i}]", out)
