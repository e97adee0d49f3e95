"""Logging: text (the default) or JSON lines, with the LeaderWorkerSet being reconciled (and the
group, where a line is about one) attached to every record.

The LWS comes from a context variable that the reconcile wrapper sets
(:func:`reconciling`), so every line logged while reconciling it carries it, including lines
of the Kubernetes client; a line about one group passes ``extra={"group": index}``. JSON
lines have the keys ``ts``, ``level``, ``logger``, ``msg``, and when known
``leaderworkerset`` (``namespace/name``), ``namespace``, ``group``, ``exc``.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime
import json
import logging
from collections.abc import Hashable, Iterator
from typing import Any

_current: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar(
    "lws_operator_reconciling", default=None
)
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


@contextlib.contextmanager
def reconciling(key: Hashable) -> Iterator[None]:
    """Within this block, log records carry ``key`` (namespace, LWS name)."""
    value = key if isinstance(key, tuple) and len(key) == 2 else None
    token = _current.set(value)
    try:
        yield
    finally:
        _current.reset(token)


class ContextFilter(logging.Filter):
    """Adds ``leaderworkerset`` and ``namespace`` to records logged while reconciling."""

    def filter(self, record: logging.LogRecord) -> bool:
        key = _current.get()
        if key is not None and not hasattr(record, "leaderworkerset"):
            record.namespace = key[0]
            record.leaderworkerset = f"{key[0]}/{key[1]}"
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key in ("leaderworkerset", "namespace", "group", "pod"):
            value = getattr(record, key, None)
            if value is not None:
                out[key] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


def configure(*, fmt: str = "text", verbose: bool = False) -> None:
    """Set up the root logger once for ``lws-operator run``."""
    handler = logging.StreamHandler()
    handler.addFilter(ContextFilter())
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
