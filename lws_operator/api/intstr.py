"""IntOrString values (maxUnavailable, maxSurge): the one place they are scaled."""

from __future__ import annotations

import re

# k8s.io/apimachinery IsValidPercent.
PERCENT_PATTERN = r"^[0-9]+%$"
_PERCENT = re.compile(PERCENT_PATTERN)


def scaled_value(value: int | str, total: int, *, round_up: bool) -> int:
    """An IntOrString scaled against ``total``, like apimachinery's
    GetScaledValueFromIntOrPercent: an int as is, "N%" as N% of total rounded down or up.

    Raises ValueError for anything else (a negative int, a string that is not a percentage)."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"invalid IntOrString {value!r}: expected an integer or a percentage")
    if total < 0:
        raise ValueError(f"cannot scale {value!r} against a negative total ({total})")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"invalid IntOrString {value}: must be >= 0")
        return value
    if not _PERCENT.fullmatch(value):
        raise ValueError(f"invalid IntOrString {value!r}: a string must be a percentage like '25%'")
    product = int(value[:-1]) * total
    return -(-product // 100) if round_up else product // 100
