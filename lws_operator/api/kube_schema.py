"""Kubernetes object schemas for the CRD: the pod template and PVC schemas of Kubernetes.

Two halves:

* **Extraction** (a developer command, run when the Kubernetes version changes): copy the
  definitions reachable from :data:`ROOTS` out of the OpenAPI v3 documents that ship in the
  ``k8s.io/kubernetes`` Go module into the committed file :data:`SCHEMA_FILE`::

      python -m lws_operator.api.kube_schema \\
          $(go env GOMODCACHE)/k8s.io/kubernetes@v1.36.5/api/openapi-spec/v3

* **Inlining** (at CRD generation time, from the committed file only): turn a definition into a
  structural CRD schema. CRDs allow no ``$ref``, so references are inlined; int-or-string and
  quantities get ``x-kubernetes-int-or-string``; embedded ObjectMeta becomes the five fields
  controller-gen's ``generateEmbeddedObjectMeta`` emits; OpenAPI extensions a CRD schema rejects
  are dropped, and zero-value defaults (which the OpenAPI builder emits for every non-pointer
  field, and which would make the API server fill pod templates with empty values) are removed.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

JsonObj = dict[str, Any]

SCHEMA_FILE = Path(__file__).with_name("kube_schemas.json")

ROOTS = (
    "io.k8s.api.core.v1.PodTemplateSpec",
    "io.k8s.api.core.v1.PersistentVolumeClaim",
    "io.k8s.api.apps.v1.StatefulSetPersistentVolumeClaimRetentionPolicy",
)
# The OpenAPI v3 documents (under api/openapi-spec/v3/) that hold the roots.
SOURCE_DOCUMENTS = ("api__v1_openapi.json", "apis__apps__v1_openapi.json")

_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_TIME = "io.k8s.apimachinery.pkg.apis.meta.v1.Time"

_SUBSTITUTED = frozenset({_INT_OR_STRING, _QUANTITY, _OBJECT_META, _TIME})

# The quantity grammar of k8s.io/apimachinery/pkg/api/resource, as controller-gen spells it.
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)

# Keys of an OpenAPI schema that a CRD's JSONSchemaProps accepts and that we keep.
_KEPT_KEYS = frozenset(
    {
        "type",
        "format",
        "description",
        "required",
        "enum",
        "default",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "pattern",
        "nullable",
        "x-kubernetes-list-type",
        "x-kubernetes-list-map-keys",
        "x-kubernetes-map-type",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-int-or-string",
        "x-kubernetes-embedded-resource",
    }
)
# Formats the API server understands for CRDs; others (e.g. "int-or-string") are dropped.
_KEPT_FORMATS = frozenset({"int32", "int64", "float", "double", "byte", "date-time", "date"})


# --- Extraction ------------------------------------------------------------------------------


def _refs(node: Any) -> Iterable[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value.rsplit("/", 1)[-1]
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def extract(documents: Iterable[JsonObj], roots: Sequence[str] = ROOTS) -> JsonObj:
    """The definitions reachable from ``roots``, taken from OpenAPI v3 ``documents``; the types
    the inliner replaces with its own schema are left out."""
    available: JsonObj = {}
    for doc in documents:
        available.update(doc.get("components", {}).get("schemas", {}))
    found: JsonObj = {}
    pending = list(roots)
    while pending:
        name = pending.pop()
        if name in found or name in _SUBSTITUTED:
            continue
        if name not in available:
            raise KeyError(f"definition {name} not found in the OpenAPI documents")
        found[name] = available[name]
        pending.extend(_refs(available[name]))
    return dict(sorted(found.items()))


def write_extract(openapi_dir: Path, out: Path, *, source: str) -> None:
    docs = [json.loads((openapi_dir / name).read_text()) for name in SOURCE_DOCUMENTS]
    data = {"source": source, "roots": list(ROOTS), "definitions": extract(docs)}
    out.write_text(json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lws_operator.api.kube_schema",
        description="Extract the pod template and PVC schemas from Kubernetes' OpenAPI v3 "
        "documents into " + SCHEMA_FILE.name,
    )
    parser.add_argument(
        "openapi_dir",
        type=Path,
        help="the api/openapi-spec/v3 directory of the k8s.io/kubernetes module",
    )
    parser.add_argument("-o", "--output", type=Path, default=SCHEMA_FILE)
    args = parser.parse_args(argv)
    openapi_dir: Path = args.openapi_dir
    # ".../k8s.io/kubernetes@v1.36.5/api/openapi-spec/v3" -> "k8s.io/kubernetes@v1.36.5"
    module = openapi_dir.resolve().parents[2]
    source = f"{module.parent.name}/{module.name}/api/openapi-spec/v3"
    write_extract(openapi_dir, args.output, source=source)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


# --- Inlining ----------------------------------------------------------------------------


@cache
def _load() -> JsonObj:
    data: JsonObj = json.loads(SCHEMA_FILE.read_text())
    return data


def source() -> str:
    """Where the committed definitions came from, e.g. ``k8s.io/kubernetes@v1.36.5/...``."""
    return str(_load()["source"])


def _is_zero(value: Any) -> bool:
    return value in ("", 0, {}, [])


def _embedded_object_meta() -> JsonObj:
    string_map = {"type": "object", "additionalProperties": {"type": "string"}}
    return {
        "type": "object",
        "properties": {
            "annotations": dict(string_map),
            "finalizers": {"type": "array", "items": {"type": "string"}},
            "labels": dict(string_map),
            "name": {"type": "string"},
            "namespace": {"type": "string"},
        },
    }


class _Inliner:
    def __init__(self, definitions: JsonObj, *, descriptions: bool) -> None:
        self._defs = definitions
        self._descriptions = descriptions
        self._stack: list[str] = []

    def definition(self, name: str, *, map_keys: frozenset[str] = frozenset()) -> JsonObj:
        if name == _INT_OR_STRING:
            return {
                "anyOf": [{"type": "integer"}, {"type": "string"}],
                "x-kubernetes-int-or-string": True,
            }
        if name == _QUANTITY:
            return {
                "anyOf": [{"type": "integer"}, {"type": "string"}],
                "pattern": QUANTITY_PATTERN,
                "x-kubernetes-int-or-string": True,
            }
        if name == _OBJECT_META:
            return _embedded_object_meta()
        if name == _TIME:
            return {"type": "string", "format": "date-time"}
        if name in self._stack:
            raise ValueError(f"recursive schema: {' -> '.join([*self._stack, name])}")
        self._stack.append(name)
        try:
            return self.node(self._defs[name], map_keys=map_keys)
        finally:
            self._stack.pop()

    def node(
        self, node: JsonObj, *, map_keys: frozenset[str] = frozenset(), keep_default: bool = False
    ) -> JsonObj:
        """``map_keys``: the x-kubernetes-list-map-keys of the list this object is an item of.
        A CRD requires each to be required or defaulted, so their defaults are kept even when
        zero (e.g. ``name: ""`` of imagePullSecrets)."""
        ref = _single_ref(node)
        if ref is not None:
            out = self.definition(ref, map_keys=map_keys)
        else:
            out = {}
            for key, value in node.items():
                if key not in _KEPT_KEYS:
                    continue
                if key == "format" and value not in _KEPT_FORMATS:
                    continue
                out[key] = value
            if "properties" in node:
                required = set(node.get("required", ()))
                out["properties"] = {
                    k: self.node(v, keep_default=k in map_keys and k not in required)
                    for k, v in node["properties"].items()
                }
            if "items" in node:
                keys = frozenset(node.get("x-kubernetes-list-map-keys", ()))
                out["items"] = self.node(node["items"], map_keys=keys)
            if isinstance(node.get("additionalProperties"), dict):
                out["additionalProperties"] = self.node(node["additionalProperties"])
        # A field's own description and default override those of the type it refers to.
        if self._descriptions and "description" in node:
            out["description"] = node["description"]
        elif not self._descriptions:
            out.pop("description", None)
        if "default" in node:
            out["default"] = node["default"]
        if "default" in out and _is_zero(out["default"]) and not keep_default:
            del out["default"]
        if "type" not in out and "x-kubernetes-int-or-string" not in out:
            raise ValueError(f"schema without a type in {self._stack}: {sorted(node)}")
        return out


def _single_ref(node: JsonObj) -> str | None:
    if "$ref" in node:
        return str(node["$ref"]).rsplit("/", 1)[-1]
    all_of = node.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and "$ref" in all_of[0]:
        return str(all_of[0]["$ref"]).rsplit("/", 1)[-1]
    return None


def structural(name: str, *, descriptions: bool = True) -> JsonObj:
    """The structural CRD schema of the Kubernetes definition ``name``, references inlined."""
    return _Inliner(_load()["definitions"], descriptions=descriptions).definition(name)


if __name__ == "__main__":
    raise SystemExit(main())
