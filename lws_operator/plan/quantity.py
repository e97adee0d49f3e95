"""Kubernetes resource quantities (``k8s.io/apimachinery/pkg/api/resource.Quantity``): parse,
add, compare and print them as the Go library does, so that sums the operator writes (a Volcano
PodGroup's ``minResources``) read exactly as upstream's.

A quantity is kept as an exact integer number of nano-units (parsing rounds finer values up, as
Go does) plus the format it was written in, which decides how a result is printed: ``1Gi`` +
``512Mi`` is ``1536Mi``, ``100m`` + ``1`` is ``1100m``, ``1e3`` + ``1`` is ``1001``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

DECIMAL_SI: Final = "DecimalSI"
BINARY_SI: Final = "BinarySI"
DECIMAL_EXPONENT: Final = "DecimalExponent"

_NANO = 10**9
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX = {exp: suffix for suffix, exp in _DECIMAL.items()}
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_BINARY_SUFFIX = {power: suffix for suffix, power in _BINARY.items()}
_NUMBER = re.compile(r"([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(.*)", re.DOTALL)
_EXPONENT = re.compile(r"[eE]([+-]?[0-9]+)")


@dataclass(frozen=True)
class Quantity:
    nanos: int
    format: str = DECIMAL_SI

    def __add__(self, other: Quantity) -> Quantity:
        """Go's ``Quantity.Add``: the receiver's format, unless the receiver is zero."""
        fmt = other.format if self.nanos == 0 else self.format
        return Quantity(self.nanos + other.nanos, fmt)

    def __str__(self) -> str:
        return _canonical(self)


def parse(value: str | int) -> Quantity:
    """``resource.ParseQuantity``; raises ValueError on a malformed quantity."""
    text = str(value)
    match = _NUMBER.fullmatch(text)
    if match is None:
        raise ValueError(f"quantity {text!r}: not a number")
    sign, number, suffix = match.groups()
    whole, _, fraction = number.partition(".")
    mantissa = int((whole or "0") + fraction)
    scale = -len(fraction)  # value = mantissa * 10**scale
    if suffix in _DECIMAL:
        fmt, factor, exp10 = DECIMAL_SI, 1, _DECIMAL[suffix]
    elif suffix in _BINARY:
        fmt, factor, exp10 = BINARY_SI, 1024 ** _BINARY[suffix], 0
    elif (exp := _EXPONENT.fullmatch(suffix)) is not None:
        fmt, factor, exp10 = DECIMAL_EXPONENT, 1, int(exp.group(1))
    else:
        raise ValueError(f"quantity {text!r}: unknown suffix {suffix!r}")
    # nanos = mantissa * factor * 10**(scale + exp10 + 9), rounded up (away from zero)
    power = scale + exp10 + 9
    numerator = mantissa * factor * 10 ** max(power, 0)
    denominator = 10 ** max(-power, 0)
    nanos = -(-numerator // denominator)
    return Quantity(-nanos if sign == "-" else nanos, fmt)


def add_all(a: dict[str, Quantity], b: dict[str, Quantity]) -> dict[str, Quantity]:
    """``quota.Add``: a new list with ``b`` added to ``a`` per resource."""
    out = {name: q + b[name] if name in b else q for name, q in a.items()}
    out.update({name: q for name, q in b.items() if name not in out})
    return out


def max_into(target: dict[str, Quantity], other: dict[str, Quantity]) -> None:
    """``maxResourceList``: raise each resource of ``target`` to ``other``'s value."""
    for name, q in other.items():
        if name not in target or q.nanos > target[name].nanos:
            target[name] = q


def _canonical(q: Quantity) -> str:
    """``Quantity.String()``: the canonical form."""
    if q.nanos == 0:
        return "0"
    fmt = q.format
    if fmt == BINARY_SI and (abs(q.nanos) < 1024 * _NANO or q.nanos % _NANO):
        fmt = DECIMAL_SI  # small or fractional: no binary suffix fits without rounding
    sign = "-" if q.nanos < 0 else ""
    if fmt == BINARY_SI:
        amount, power = abs(q.nanos) // _NANO, 0
        while amount % 1024 == 0 and power < 6:
            amount, power = amount // 1024, power + 1
        return f"{sign}{amount}{_BINARY_SUFFIX.get(power, '')}"
    amount, exponent = abs(q.nanos), -9
    while amount % 10 == 0:
        amount, exponent = amount // 10, exponent + 1
    while exponent % 3:
        amount, exponent = amount * 10, exponent - 1
    if fmt == DECIMAL_EXPONENT:
        suffix = f"e{exponent}" if exponent else ""
    else:
        while exponent > 18:  # beyond exa: no suffix, spell the digits out
            amount, exponent = amount * 1000, exponent - 3
        suffix = _DECIMAL_SUFFIX[exponent]
    return f"{sign}{amount}{suffix}"
