"""Kubernetes timestamps as text: RFC 3339 in UTC, the way the API server writes them.

Three precisions: seconds (``metav1.Time``: conditions, annotations this operator writes),
milliseconds (the failure history's records, which order recreations within a second) and
microseconds (``metav1.MicroTime``: events, leases). Parsing takes any of them and answers
None for what is not a time, as a missing timestamp reads."""

from __future__ import annotations

import datetime
from typing import Any


def parse_time(value: Any) -> datetime.datetime | None:
    """A timestamp, or None when ``value`` is empty or not RFC 3339."""
    if not value:
        return None
    try:
        return datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None


def format_time(when: datetime.datetime) -> str:
    """Seconds: ``2026-12-07T05:30:37Z``."""
    return when.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_millis(when: datetime.datetime) -> str:
    """Milliseconds: ``2026-12-07T05:30:37.123Z``."""
    return when.astimezone(datetime.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def format_micros(when: datetime.datetime) -> str:
    """Microseconds: ``2026-12-07T05:30:37.123456Z``."""
    return when.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
