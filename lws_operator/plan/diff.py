"""Does an observed object already have what we would write? Skipping writes that change
nothing keeps the API server's load (and our request count) down."""

from __future__ import annotations

from typing import Any


def contains(observed: Any, desired: Any) -> bool:
    """True when every field of ``desired`` is in ``observed`` with the same value. Objects may
    have more keys in ``observed`` (defaults the API server filled in); lists must match element
    by element, each element by the same rule."""
    if isinstance(desired, dict):
        if not isinstance(observed, dict):
            return False
        # A null in desired means "not set", which the API server stores as absent.
        return all(
            v is None or (k in observed and contains(observed[k], v)) for k, v in desired.items()
        )
    if isinstance(desired, list):
        if not isinstance(observed, list) or len(observed) != len(desired):
            return False
        return all(contains(o, d) for o, d in zip(observed, desired, strict=True))
    if isinstance(desired, bool) or isinstance(observed, bool):
        return desired is observed
    return bool(observed == desired)
