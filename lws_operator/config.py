"""The operator's configuration file (``lws-operator run --config FILE``), validated strictly.

```yaml
apiVersion: config.lws-operator.x-k8s.io/v1alpha1
kind: Configuration
gangScheduling:
  provider: kubernetes      # or volcano
groupRecreation:            # every field optional; these are the defaults
  backoff: {initialSeconds: 10, maxSeconds: 300, resetAfterReadySeconds: 600}
  history: {recreationsPerGroup: 5, logTailLines: 50, logTailBytes: 4096,
            logTailsPerRecreation: 3, maxBytes: 524288, logTimeoutSeconds: 2}
  failedGroupGraceSeconds: 1  # null: each pod's own terminationGracePeriodSeconds
```

Unknown fields are errors, as upstream decodes its own file strictly; every error names the
field. Command-line flags given explicitly override the file. See docs/configuration.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lws_operator.plan.lws.backoff import Backoff
from lws_operator.plan.lws.history import Limits
from lws_operator.plan.lws.restart import FAILED_GROUP_GRACE

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
        description="kubernetes: Kubernetes' native PodGroups, in the newest version the "
        "cluster serves (scheduling.k8s.io/v1alpha2 in 1.36, v1beta1 in 1.37; none before "
        "1.36: then no gangs, and an error says why); volcano: Volcano PodGroups "
        "(scheduling.volcano.sh/v1beta1)."
    )


class BackoffConfig(_Strict):
    """The wait before recreating a group that failed again soon after its last recreation:
    initialSeconds before the second, doubled for each further one up to maxSeconds; the
    count starts again once the group has stayed Ready for resetAfterReadySeconds. The first
    recreation is always immediate. initialSeconds 0 turns the backoff off."""

    initial_seconds: float = Field(default=Backoff.initial, ge=0, alias="initialSeconds")
    max_seconds: float = Field(default=Backoff.maximum, ge=0, alias="maxSeconds")
    reset_after_ready_seconds: float = Field(
        default=Backoff.reset_after, ge=0, alias="resetAfterReadySeconds"
    )


class HistoryConfig(_Strict):
    """What each recreation keeps in the LWS's history ConfigMap, and its bounds."""

    recreations_per_group: int = Field(
        default=Limits.recreations_per_group, ge=1, le=100, alias="recreationsPerGroup"
    )
    log_tail_lines: int = Field(default=Limits.log_tail_lines, ge=0, le=10000, alias="logTailLines")
    log_tail_bytes: int = Field(default=Limits.log_tail_bytes, ge=0, le=65536, alias="logTailBytes")
    log_tails_per_recreation: int = Field(
        default=Limits.log_tails_per_recreation, ge=0, le=16, alias="logTailsPerRecreation"
    )
    max_bytes: int = Field(default=Limits.max_bytes, ge=16384, le=900000, alias="maxBytes")
    log_timeout_seconds: float = Field(
        default=Limits.log_timeout, gt=0, le=30, alias="logTimeoutSeconds"
    )


class GroupRecreation(_Strict):
    backoff: BackoffConfig = Field(default_factory=lambda: BackoffConfig())
    history: HistoryConfig = Field(default_factory=lambda: HistoryConfig())
    failed_group_grace_seconds: int | None = Field(
        default=FAILED_GROUP_GRACE, ge=1, alias="failedGroupGraceSeconds"
    )
    """Seconds the pods of a failed group get to stop when it is recreated (never more than
    a pod's own); null: each pod's own terminationGracePeriodSeconds, as upstream."""


class Configuration(_Strict):
    api_version: Literal["config.lws-operator.x-k8s.io/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["Configuration"]
    gang_scheduling: GangScheduling | None = Field(default=None, alias="gangScheduling")
    group_recreation: GroupRecreation = Field(
        default_factory=lambda: GroupRecreation(), alias="groupRecreation"
    )

    @property
    def backoff(self) -> Backoff:
        b = self.group_recreation.backoff
        return Backoff(b.initial_seconds, b.max_seconds, b.reset_after_ready_seconds)

    @property
    def history_limits(self) -> Limits:
        h = self.group_recreation.history
        return Limits(
            recreations_per_group=h.recreations_per_group,
            log_tail_lines=h.log_tail_lines,
            log_tail_bytes=h.log_tail_bytes,
            log_tails_per_recreation=h.log_tails_per_recreation,
            max_bytes=h.max_bytes,
            log_timeout=h.log_timeout_seconds,
        )

    @property
    def failed_group_grace(self) -> int | None:
        return self.group_recreation.failed_group_grace_seconds

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
