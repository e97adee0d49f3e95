"""``kubectl lws status|plan`` for DisaggregatedSets, from objects as the API server returns
them (the in-memory world of tests/unit/plan/ds_world.py)."""

from __future__ import annotations

import copy
import datetime

from lws_operator.api import constants as lc
from lws_operator.kubectl.ds import plan_text, status_text
from lws_operator.plan.ds.revision import compute_revision
from tests.unit.plan.ds_world import World, ds_body, role
from tests.unit.test_kubectl_lws import pod

NOW = datetime.datetime(2026, 1, 1, 12, 0, 0, tzinfo=datetime.UTC)


def world() -> World:
    w = World(
        ds_body(
            "svc",
            role("prefill", 2, surge=1, unavailable=0),
            role("decode", 1),
            slices=2,
            placementPolicy={"type": "ExclusiveSlice", "topology": "zone"},
        )
    )
    w.converge()
    return w


def test_status_shows_each_child_and_its_groups() -> None:
    w = world()
    rev = compute_revision(w.ds["spec"]["roles"])
    child = f"svc-1-{rev}-prefill"
    leader = pod(f"{child}-0", 0, 0)
    leader["metadata"]["labels"][lc.SET_NAME_LABEL] = child
    leader["spec"]["nodeName"] = "node-a"
    nodes = {"node-a": {"metadata": {"labels": {"zone": "z1"}}}}
    out = status_text(
        w.ds, list(w.lws.values()), {child: [leader]}, {}, set(w.services), nodes, NOW
    )
    lines = out.splitlines()
    assert (
        lines[0] == f"ns/svc: revision {rev}, 2 slices, Available, placement ExclusiveSlice on zone"
    )
    assert lines[1].split() == [
        "ROLE", "SLICE", "REVISION", "LWS", "GROUPS", "READY", "UPDATED", "SERVICE"
    ]  # fmt: skip
    assert lines[2].split() == [
        "prefill", "0", rev, "(current)", f"svc-0-{rev}-prefill", "2", "2", "2",
        f"svc-0-{rev}-prefill-prv",
    ]  # fmt: skip
    assert len([ln for ln in lines[2:6] if "(current)" in ln]) == 4
    section = out.split(f"\n{child}:\n")[1].splitlines()
    assert section[1].split()[:3] == ["0", "abc", "1/1"] and "z1" in section[1].split()


def test_plan_previews_each_slices_steps() -> None:
    w = world()
    new = copy.deepcopy(w.ds)
    for r in new["spec"]["roles"]:
        r["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["image"] = "x"
    out = plan_text(w.ds, new, list(w.lws.values()))
    old, rev = compute_revision(w.ds["spec"]["roles"]), compute_revision(new["spec"]["roles"])
    assert out.startswith(f"ns/svc: revision {old} -> {rev}\n")
    slice0 = out.split("slice 0: ")[1].split("\nslice 1")[0].strip().splitlines()
    assert slice0[0] == "4 steps"
    assert [ln.split()[1:] for ln in slice0[2:]] == [
        ["2/0", "1/0"], ["2/1", "1/1"], ["1/1", "1/1"], ["1/2", "1/1"], ["0/2", "0/1"]
    ]  # fmt: skip
    same = plan_text(w.ds, w.ds, list(w.lws.values()))
    assert "no template change" in same and same.count("no rollout") == 2
