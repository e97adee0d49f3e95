"""Annotated field types shared by the API models, and the base model they all derive from.

Each type carries two faces: how pydantic validates a value, and how the CRD schema spells it
(``WithJsonSchema``). Markers starting with ``x-lws-`` are resolved by :mod:`lws_operator.api.crd`.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, Strict, WithJsonSchema
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

# The JSON-schema key that asks the CRD generator to put a Kubernetes schema here.
KUBE_SCHEMA_MARKER = "x-lws-kube-schema"


class ApiModel(BaseModel):
    """camelCase on the wire, snake_case in Python; unknown fields are ignored so that reading
    an object written by another actor (or a newer version) never fails."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
        use_enum_values=False,
        validate_default=False,
    )

    def to_dict(self) -> dict[str, Any]:
        """The object as the API server would store it: camelCase keys, no unset optionals."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class ApiObject(ApiModel):
    """A whole object: its metadata kept as the API server sent it, with the few parts every
    reader needs."""

    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def name(self) -> str:
        return str(self.metadata.get("name", ""))

    @property
    def namespace(self) -> str:
        return str(self.metadata.get("namespace", ""))

    @property
    def uid(self) -> str:
        return str(self.metadata.get("uid", ""))

    @property
    def annotations(self) -> dict[str, str]:
        value = self.metadata.get("annotations")
        return dict(value) if isinstance(value, dict) else {}


# Bounds the run-time cost of the CEL rules that parse percentages ("100%" needs 4). The CRD's
# static cost estimator ignores maxLength on int-or-string; see rules._cel_scaled.
INT_OR_STRING_MAX_LENGTH = 64


def _int_or_string(value: Any) -> int | str:
    # bool is an int in Python but not in JSON; the API server rejects it, so do we.
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise PydanticCustomError("int_or_string", "must be an integer or a string")
    if isinstance(value, str) and len(value) > INT_OR_STRING_MAX_LENGTH:
        raise PydanticCustomError(
            "int_or_string_too_long",
            "Too long: may not be more than {max_length} bytes",
            {"max_length": INT_OR_STRING_MAX_LENGTH},
        )
    return value


# An intstr.IntOrString: an integer, or a string such as "25%".
IntOrString = Annotated[
    int | str,
    PlainValidator(_int_or_string),
    WithJsonSchema(
        {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "x-kubernetes-int-or-string": True,
            "maxLength": INT_OR_STRING_MAX_LENGTH,
        }
    ),
]


# Integers exactly as the API server takes them: no "3", no 3.0, no true. The bounds of an
# int32 are also written out: Kubernetes 1.33's API server does not enforce ``format: int32``
# on custom resources (1.36's does), and a value the Go types cannot hold must be refused at
# admission on every supported version, not by the controllers that decode it.
Int32 = Annotated[
    int,
    Strict(),
    Field(ge=-(2**31), le=2**31 - 1),
    WithJsonSchema(
        {"type": "integer", "format": "int32", "minimum": -(2**31), "maximum": 2**31 - 1}
    ),
]
Int64 = Annotated[
    int,
    Strict(),
    Field(ge=-(2**63), le=2**63 - 1),
    WithJsonSchema({"type": "integer", "format": "int64"}),
]


def kube_object(definition: str) -> Any:
    """A plain dict in Python, schema'd in the CRD as the Kubernetes ``definition`` (for example
    ``io.k8s.api.core.v1.PodTemplateSpec``). Plain dicts because the operator copies these
    through unchanged and must not trip over fields a newer Kubernetes adds."""
    return Annotated[dict[str, Any], WithJsonSchema({KUBE_SCHEMA_MARKER: definition})]


PodTemplateSpec = kube_object("io.k8s.api.core.v1.PodTemplateSpec")
PersistentVolumeClaim = kube_object("io.k8s.api.core.v1.PersistentVolumeClaim")
# Embedded metadata (name, namespace, labels, annotations, finalizers), as in pod templates.
ObjectMeta = kube_object("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")

__all__ = [
    "KUBE_SCHEMA_MARKER",
    "ApiModel",
    "ApiObject",
    "Int32",
    "Int64",
    "IntOrString",
    "ObjectMeta",
    "PersistentVolumeClaim",
    "PodTemplateSpec",
]
