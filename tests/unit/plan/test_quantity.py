"""Quantities print as k8s.io/apimachinery's ``Quantity.String()`` does.

The expected strings were produced by ``resource.MustParse(s).String()`` and ``Quantity.Add``
of k8s.io/apimachinery v0.36.5 (a throwaway Go program; not part of the test run).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lws_operator.plan.quantity import Quantity, add_all, max_into, parse

CANONICAL = {
    "1Gi": "1Gi",
    "1024Mi": "1Gi",
    "1536Mi": "1536Mi",
    "0.5Gi": "512Mi",
    "1.5Gi": "1536Mi",
    "100m": "100m",
    "1000m": "1",
    "1.5": "1500m",
    "0.1": "100m",
    "1e3": "1e3",
    "1000": "1k",
    "1500": "1500",
    "12e6": "12e6",
    "2k": "2k",
    "0": "0",
    "1Ki": "1Ki",
    "1023": "1023",
    "0.5Ki": "512",
    "5G": "5G",
    "0.000000001": "1n",
    "0.0000000001": "1n",
    "-1": "-1",
    "1.0001": "1000100u",
    "1E": "1E",
    "1M": "1M",
    "1e-3": "1e-3",
    "-1.5Gi": "-1536Mi",
    "2048": "2048",
    "8": "8",
    "3E": "3E",
    "1.5e3": "1500",
    "0.5": "500m",
    "1Ei": "1Ei",
}

SUMS = {
    ("1Gi", "512Mi"): "1536Mi",
    ("100m", "1"): "1100m",
    ("1", "100m"): "1100m",
    ("0", "1Gi"): "1Gi",
    ("1e3", "1"): "1001",
    ("1e3", "1e3"): "2e3",
    ("1k", "1Ki"): "2024",
    ("1Ki", "1k"): "2024",
    ("4", "200m"): "4200m",
    ("1Gi", "0.5"): "1073741824500m",
    ("500m", "500m"): "1",
}


@pytest.mark.parametrize(("text", "canonical"), sorted(CANONICAL.items()))
def test_canonical_form_as_go(text: str, canonical: str) -> None:
    assert str(parse(text)) == canonical


@pytest.mark.parametrize(("pair", "total"), sorted(SUMS.items()))
def test_sum_keeps_the_receivers_format_as_go(pair: tuple[str, str], total: str) -> None:
    assert str(parse(pair[0]) + parse(pair[1])) == total


def test_integers_parse_like_strings() -> None:
    assert parse(8) == parse("8")


@pytest.mark.parametrize("bad", ["", "1x", "Gi", "1.2.3", "e3", "1 Gi", "--1"])
def test_malformed_quantities_are_rejected(bad: str) -> None:
    with pytest.raises(ValueError, match="quantity"):
        parse(bad)


def test_lists_add_and_take_maxima_per_resource() -> None:
    a = {"cpu": parse("1"), "memory": parse("1Gi")}
    b = {"cpu": parse("500m"), "nvidia.com/gpu": parse("2")}
    assert {k: str(v) for k, v in add_all(a, b).items()} == {
        "cpu": "1500m",
        "memory": "1Gi",
        "nvidia.com/gpu": "2",
    }
    max_into(a, {"cpu": parse("2"), "memory": parse("1G")})
    assert {k: str(v) for k, v in a.items()} == {"cpu": "2", "memory": "1Gi"}


@given(
    st.integers(min_value=-(10**24), max_value=10**24),
    st.sampled_from(["DecimalSI", "BinarySI", "DecimalExponent"]),
)
def test_printing_then_parsing_keeps_the_value(nanos: int, fmt: str) -> None:
    q = Quantity(nanos, fmt)
    assert parse(str(q)).nanos == nanos
