"""Go's zero values: what the LeaderWorkerSet webhook replaces, and when it is called."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from lws_operator.api.zero_values import ZERO_VALUE_DEFAULTS, match_condition, with_defaults


def test_each_zero_value_is_replaced_by_upstreams_default() -> None:
    obj = {"spec": {"rolloutStrategy": {"type": ""}, "leaderWorkerTemplate": {"restartPolicy": ""}}}
    out = with_defaults(obj)
    assert out["spec"]["rolloutStrategy"]["type"] == "RollingUpdate"
    assert out["spec"]["leaderWorkerTemplate"]["restartPolicy"] == "RecreateGroupOnPodRestart"
    assert obj["spec"]["rolloutStrategy"]["type"] == "", "the input is not changed"


def test_the_condition_names_every_path_optionally() -> None:
    cel = match_condition()
    for path, _ in ZERO_VALUE_DEFAULTS:
        assert "object" + "".join(f".?{p}" for p in path) + '.orValue("-") == ""' in cel
    assert cel.count(" || ") == len(ZERO_VALUE_DEFAULTS) - 1


values = st.one_of(st.none(), st.just(""), st.sampled_from(["RollingUpdate", "None", "x"]))


@given(rollout=values, restart=values, spec_is_dict=st.booleans())
def test_only_zero_values_change(
    rollout: str | None, restart: str | None, spec_is_dict: bool
) -> None:
    spec: Any = {
        "rolloutStrategy": {"type": rollout},
        "leaderWorkerTemplate": {"restartPolicy": restart},
    }
    obj = {"spec": spec if spec_is_dict else "not an object"}
    out = with_defaults(obj)
    if not spec_is_dict:
        assert out == obj
        return
    assert out["spec"]["rolloutStrategy"]["type"] == ("RollingUpdate" if rollout == "" else rollout)
    expected = "RecreateGroupOnPodRestart" if restart == "" else restart
    assert out["spec"]["leaderWorkerTemplate"]["restartPolicy"] == expected
