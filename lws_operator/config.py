"""The operator's configuration file (``lws-operator run --config FILE``), validated strictly.

```yaml
apiVersion: config.lws-operator.x-k8s.io/v1alpha1
kind: Configuration
gangScheduling:
  provider: kubernetes      # or volcano
```

Unknown fields are errors, as upstream decodes its own file strictly; every error names the
field. Command-line flags given explicitly override the file. See docs/configuration.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

API_VERSION: Final = "config.lws-operator.x-k8s.io/v1alpha1"
KIND: Final = "Configuration"
UPSTREAM_API_VERSION: Final = "config.lws.x-k8s.io/v1alpha1"

GangProvider = Literal["kubernetes", "volcano"]


class ConfigError(ValueError):
    """The file cannot be read or is invalid; the message names the file and every bad field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class GangScheduling(_Strict):
    """Which scheduler gangs each group: a PodGroup per group, pods joined to it."""

    provider: GangProvider = Field(
        description="kubernetes: Kubernetes >= 1.36 native PodGroups (scheduling.k8s.io/"
        "v1alpha2); volcano: Volcano PodGroups (scheduling.volcano.sh/v1beta1)."
    )


class Configuration(_Strict):
    api_version: Literal["config.lws-operator.x-k8s.io/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["Configuration"]
    gang_scheduling: GangScheduling | None = Field(default=None, alias="gangScheduling")

    @property
    def gang_provider(self) -> str | None:
        return self.gang_scheduling.provider if self.gang_scheduling else None


def load(path: Path) -> Configuration:
    """Read and validate the file at ``path``; ConfigError says what is wrong."""
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(f"{path}: {' '.join(str(e).split())}") from None
    return parse(data, str(path))


def parse(data: Any, source: str = "configuration") -> Configuration:
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: must be a mapping with apiVersion {API_VERSION}, kind {KIND}")
    if data.get("apiVersion") == UPSTREAM_API_VERSION:
        raise ConfigError(
            f"{source}: apiVersion {UPSTREAM_API_VERSION} is upstream LWS's configuration file, "
            f"which lws-operator does not read; write apiVersion {API_VERSION} "
            "(docs/configuration.md maps upstream's fields)"
        )
    try:
        return Configuration.model_validate(data)
    except ValidationError as e:
        lines = [f"{source}: {_where(err['loc'])}: {_message(err)}" for err in e.errors()]
        raise ConfigError("\n".join(lines)) from None


def _where(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(p) for p in loc) or "(top level)"


def _message(err: Any) -> str:
    kind = err["type"]
    if kind == "extra_forbidden":
        return "unknown field"
    if kind == "missing":
        return "required field is missing"
    if kind == "literal_error":
        expected = err.get("ctx", {}).get("expected", "")
        return f"must be {expected}, not {err.get('input')!r}"
    if kind in ("model_type", "model_attributes_type"):
        return f"must be a mapping, not {err.get('input')!r}"
    return str(err["msg"])
