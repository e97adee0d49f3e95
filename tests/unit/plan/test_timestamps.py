"""Kubernetes timestamps (plan/timestamps.py): the three precisions, and parsing that answers
None for anything that is not a time."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lws_operator.plan.timestamps import format_micros, format_millis, format_time, parse_time

WHEN = datetime.datetime(2026, 12, 7, 5, 30, 37, 123456, tzinfo=datetime.UTC)


def test_the_three_precisions_in_utc() -> None:
    assert format_time(WHEN) == "2026-12-07T05:30:37Z"
    assert format_millis(WHEN) == "2026-12-07T05:30:37.123Z"
    assert format_micros(WHEN) == "2026-12-07T05:30:37.123456Z"
    east = WHEN.astimezone(datetime.timezone(datetime.timedelta(hours=2)))
    assert format_time(east) == "2026-12-07T05:30:37Z", "another zone: written in UTC"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-12-07T05:30:37Z", WHEN.replace(microsecond=0)),
        ("2026-12-07T05:30:37.123456Z", WHEN),
        ("2026-12-07T07:30:37+02:00", WHEN.replace(microsecond=0)),
        (None, None),
        ("", None),
        ("yesterday", None),
        (0, None),
    ],
)
def test_parse_time(value: Any, expected: datetime.datetime | None) -> None:
    assert parse_time(value) == expected


@given(st.datetimes(min_value=datetime.datetime(1970, 1, 1), timezones=st.just(datetime.UTC)))
def test_each_precision_reads_back_what_it_keeps(when: datetime.datetime) -> None:
    millis = when.microsecond // 1000 * 1000
    assert parse_time(format_time(when)) == when.replace(microsecond=0)
    assert parse_time(format_millis(when)) == when.replace(microsecond=millis)
    assert parse_time(format_micros(when)) == when
