"""Properties of the validation arithmetic and of validate() over generated objects."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from lws_operator.api import LeaderWorkerSet, validate
from lws_operator.api.intstr import scaled_value
from lws_operator.api.rules import _scaled_or_none, max_group_index, max_name_length
from tests.unit.api.lws_testdata import base_object, lws_objects


@given(replicas=st.integers(0, 10_000), percent=st.integers(0, 100), zeros=st.integers(0, 3))
def test_percentages_scale_like_intstr(replicas: int, percent: int, zeros: int) -> None:
    value = "0" * zeros + f"{percent}%"
    assert scaled_value(value, replicas, round_up=False) == math.floor(replicas * percent / 100)
    assert scaled_value(value, replicas, round_up=True) == math.ceil(replicas * percent / 100)


@given(st.sampled_from(["101%", "1.5%", "%", "x", "-1%", "1"]), st.integers(0, 100))
def test_the_rules_scale_no_invalid_percentage(value: str, replicas: int) -> None:
    """As their CEL does: a percentage above 100% is refused by a rule of its own."""
    assert _scaled_or_none(value, replicas, round_up=True) is None


@given(
    replicas=st.integers(0, 100_000),
    size=st.integers(1, 9),
    surge=st.one_of(st.integers(0, 200_000), st.integers(0, 100).map(lambda p: f"{p}%")),
    name_length=st.integers(1, 63),
)
def test_name_limit_is_exactly_what_fits_in_pod_labels(
    replicas: int, size: int, surge: int | str, name_length: int
) -> None:
    """Brute force: build every controller-revision-hash label value the StatefulSet
    controller would write (worst-case 10-character hash) and check them against 63."""
    obj = base_object("x")
    obj["spec"]["replicas"] = replicas
    obj["spec"]["leaderWorkerTemplate"]["size"] = size
    obj["spec"]["rolloutStrategy"] = {"rollingUpdateConfiguration": {"maxSurge": surge}}
    spec = LeaderWorkerSet.model_validate(obj).spec
    name = "n" * name_length
    hash10 = "h" * 10
    labels = [f"{name}-{hash10}"]
    if size > 1:
        last_group = max_group_index(spec)
        labels.append(f"{name}-{max(last_group, 0)}-{hash10}")
    fits = all(len(value) <= 63 for value in labels)
    assert fits == (name_length <= max_name_length(spec))


@given(lws_objects())
def test_validate_never_raises_and_reports_known_paths(obj: dict[str, Any]) -> None:
    for error in validate(obj):
        assert error.path.startswith(("metadata.", "spec")), error
        assert error.message


@given(lws_objects())
def test_valid_objects_parse_and_round_trip(obj: dict[str, Any]) -> None:
    if validate(obj):
        return
    once = LeaderWorkerSet.model_validate(obj).to_dict()
    assert LeaderWorkerSet.model_validate(once).to_dict() == once
    assert validate(once) == []
    # Re-submitting an unchanged valid object is always a valid update.
    assert validate(once, once) == []
