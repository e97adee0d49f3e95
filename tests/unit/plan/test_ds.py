"""One reconcile of a DisaggregatedSet, decided (plan/ds/reconcile.py): upstream's controller,
executor, service and scaler manager cases (``pkg/controllers/disaggregatedset/*_test.go`` at
v0.10.0, read as behaviour facts), on the in-memory world of ``ds_world.py``."""

from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lws_operator.api import constants as lc
from lws_operator.api import ds_constants as c
from lws_operator.plan.ds.objects import legacy_lws_name, lws_name
from lws_operator.plan.ds.revision import compute_revision
from tests.unit.plan.ds_world import UID, World, ds_body, role


def revision_of(world: World) -> str:
    return compute_revision(world.ds["spec"]["roles"])


def names(world: World) -> set[str]:
    return set(world.lws)


def writes(world: World, verb: str | None = None, kind: str | None = None) -> list[Any]:
    return [
        w
        for w in world.plan().writes
        if (verb is None or w.verb == verb) and (kind is None or w.kind == kind)
    ]


def fresh(*roles: dict[str, Any], slices: int = 1, **spec: Any) -> World:
    return World(ds_body("svc", *roles, slices=slices, **spec))


def upgrade(world: World, image: str) -> None:
    for r in world.ds["spec"]["roles"]:
        r["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["image"] = (
            image
        )
    world.ds["metadata"]["generation"] += 1


# --- create and scale ------------------------------------------------------------------------


def test_fresh_set_creates_one_lws_per_role_with_upstreams_names_and_labels() -> None:
    world = fresh(role("prefill", 2, labels={"team": "a"}), role("decode", 1))
    world.reconcile()
    rev = revision_of(world)
    assert names(world) == {lws_name("svc", 0, rev, "prefill"), lws_name("svc", 0, rev, "decode")}
    prefill = world.lws[f"svc-0-{rev}-prefill"]
    assert prefill["spec"]["replicas"] == 2
    system = {
        "app": "svc-0-prefill",
        c.ROLE_LABEL: "prefill",
        c.SLICE_LABEL: "0",
        c.SET_NAME_LABEL: "svc",
        c.REVISION_LABEL: rev,
    }
    assert prefill["metadata"]["labels"] == {"team": "a", **system}
    template = prefill["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    assert template["metadata"]["labels"] == system
    assert "affinity" not in template["spec"]
    assert prefill["metadata"]["ownerReferences"] == [
        {"apiVersion": c.API_VERSION, "kind": c.KIND, "name": "svc", "uid": UID, "controller": True}
    ]
    assert not world.services  # nothing is ready yet


def test_static_scale_without_a_rollout() -> None:
    world = fresh(role("prefill", 1), role("decode", 1))
    world.converge()
    before = names(world)
    world.ds["spec"]["roles"][0]["spec"]["replicas"] = 3
    world.converge()
    assert names(world) == before
    assert sorted(world.replicas().values()) == [1, 3]
    assert revision_of(world) in next(iter(before))


def test_slices_make_one_set_of_roles_each_and_removed_slices_go() -> None:
    world = fresh(role("prefill", 1), role("decode", 2), slices=3)
    world.converge()
    rev = revision_of(world)
    assert names(world) == {
        lws_name("svc", s, rev, r) for s in range(3) for r in ("prefill", "decode")
    }
    assert len(world.services) == 6
    world.ds["spec"]["slices"] = 1
    world.converge()
    assert names(world) == {lws_name("svc", 0, rev, r) for r in ("prefill", "decode")}
    assert set(world.services) == {f"{n}-prv" for n in names(world)}
    assert any("for removed slice 2" in e.note for e in world.events)


def test_slices_do_not_start_a_rollout() -> None:
    world = fresh(role("prefill", 1), role("decode", 1))
    world.converge()
    world.ds["spec"]["slices"] = 2
    plan = world.plan()
    assert {w.verb for w in plan.writes if w.kind == "LeaderWorkerSet"} == {"create"}
    assert all("-1-" in w.name for w in plan.writes if w.kind == "LeaderWorkerSet")


# --- services ----------------------------------------------------------------------------------


def test_services_are_headless_portless_and_wait_for_every_role() -> None:
    world = fresh(role("prefill", 1), role("decode", 1))
    world.reconcile()
    rev = revision_of(world)
    prefill = f"svc-0-{rev}-prefill"
    world.lws[prefill]["status"] = {"replicas": 1, "readyReplicas": 1}
    assert not writes(world, "create", "Service")  # decode not ready
    world.ready()
    world.reconcile()
    svc = world.services[f"{prefill}-prv"]
    labels = {
        c.SET_NAME_LABEL: "svc",
        c.ROLE_LABEL: "prefill",
        c.REVISION_LABEL: rev,
        c.SLICE_LABEL: "0",
    }
    assert svc["spec"] == {"clusterIP": "None", "selector": labels}
    assert svc["metadata"]["labels"] == labels


def test_old_services_stay_while_their_revision_serves_then_go() -> None:
    world = fresh(role("prefill", 2), role("decode", 2))
    world.converge()
    old = set(world.services)
    upgrade(world, "nginx:2")
    for _ in range(3):  # new revision created and first scaled up, old still serving
        world.reconcile()
        world.ready()
    assert old <= set(world.services) and len(world.services) == 4
    world.converge()
    assert not old & set(world.services) and len(world.services) == 2


# --- rollouts ----------------------------------------------------------------------------------


def test_a_rollout_starts_by_recording_the_old_replicas_and_creating_the_new_at_zero() -> None:
    world = fresh(role("prefill", 2), role("decode", 1))
    world.converge()
    old = dict(world.lws)
    upgrade(world, "nginx:2")
    plan = world.reconcile()
    rev = revision_of(world)
    assert [e.reason for e in plan.events] == ["RollingUpdateStarted"]
    for name in old:
        annotations = world.lws[name]["metadata"]["annotations"]
        assert annotations[c.INITIAL_REPLICAS_ANNOTATION] == str(old[name]["spec"]["replicas"])
    assert world.lws[f"svc-0-{rev}-prefill"]["spec"]["replicas"] == 0
    assert world.lws[f"svc-0-{rev}-decode"]["spec"]["replicas"] == 0


def test_no_step_until_the_new_revision_is_ready() -> None:
    world = fresh(
        role("prefill", 4, surge=2, unavailable=0), role("decode", 4, surge=2, unavailable=0)
    )
    world.converge()
    upgrade(world, "nginx:2")
    world.reconcile()  # start
    world.ready()
    world.reconcile()  # first step: new 0 -> 2
    rev = revision_of(world)
    assert world.lws[f"svc-0-{rev}-prefill"]["spec"]["replicas"] == 2
    plan = world.plan()  # new groups not ready yet: wait
    assert plan.waiting == [0] and not [w for w in plan.writes if w.kind == "LeaderWorkerSet"]
    world.ready()
    assert any(w.verb == "patch" for w in writes(world, kind="LeaderWorkerSet"))


def rollout_states(world: World, old_rev: str, new_rev: str) -> list[tuple[int, ...]]:
    states = []
    for seen in world.converge():
        states.append(
            tuple(
                sum(n for name, n in seen.items() if f"-{rev}-{r}" in name)
                for rev in (old_rev, new_rev)
                for r in ("prefill", "decode")
            )
        )
    return states


def test_a_rollout_follows_the_planners_steps() -> None:
    world = fresh(
        role("prefill", 4, surge=1, unavailable=0), role("decode", 2, surge=1, unavailable=0)
    )
    world.converge()
    old_rev = revision_of(world)
    upgrade(world, "nginx:2")
    states = rollout_states(world, old_rev, revision_of(world))
    distinct = [s for i, s in enumerate(states) if i == 0 or s != states[i - 1]]
    assert distinct == [
        (4, 2, 0, 0),
        (4, 2, 1, 1),
        (3, 2, 1, 1),
        (3, 2, 2, 1),
        (2, 1, 2, 1),
        (2, 1, 3, 2),
        (1, 1, 3, 2),
        (1, 1, 4, 2),
        (0, 0, 4, 2),
    ]
    assert names(world) == {f"svc-0-{revision_of(world)}-{r}" for r in ("prefill", "decode")}
    assert any(e.reason == "RollingUpdateCompleted" for e in world.events)


def test_old_and_new_replicas_are_moved_by_the_executor_as_upstreams() -> None:
    """TestReconcileRollingUpdateABCScenario: A (oldest), B, C (target), 4+4 wanted."""
    world = fresh(role("prefill", 4), role("decode", 4))
    rev_c = revision_of(world)

    def lws(rev: str, r: str, n: int, created: str) -> dict[str, Any]:
        return {
            "apiVersion": lc.API_VERSION,
            "kind": lc.KIND,
            "metadata": {
                "name": f"svc-0-{rev}-{r}",
                "uid": f"u-{rev}-{r}",
                "creationTimestamp": created,
                "labels": {
                    c.SET_NAME_LABEL: "svc",
                    c.ROLE_LABEL: r,
                    c.REVISION_LABEL: rev,
                    c.SLICE_LABEL: "0",
                },
                "annotations": {c.INITIAL_REPLICAS_ANNOTATION: "2"} if rev != rev_c else {},
                "ownerReferences": [{"kind": c.KIND, "uid": UID, "controller": True}],
            },
            "spec": {"replicas": n},
            "status": {"replicas": n, "readyReplicas": n, "updatedReplicas": n},
        }

    cases = [
        ((2, 2, 2, 2, 0, 0), (2, 2, 2, 2, 1, 1)),  # first step scales up C without a drain
        ((0, 0, 2, 2, 2, 2), (0, 0, 2, 2, 3, 3)),  # C scales up while B stays
        ((2, 2, 2, 2, 2, 2), (2, 2, 1, 1, 2, 2)),  # drains the newest old revision (B) first
    ]
    for given_, expected in cases:
        world.lws = {}
        for (rev, when), (p, d) in zip(
            (
                ("aaaa0000", "2026-01-01T00:00:00Z"),
                ("bbbb0000", "2026-01-01T01:00:00Z"),
                (rev_c, "2026-01-01T02:00:00Z"),
            ),
            zip(given_[::2], given_[1::2], strict=True),
            strict=True,
        ):
            if rev == "aaaa0000" and p == d == 0:
                continue
            for r, n in (("prefill", p), ("decode", d)):
                obj = lws(rev, r, n, when)
                world.lws[obj["metadata"]["name"]] = obj
        world.reconcile()
        got = tuple(
            world.lws.get(f"svc-0-{rev}-{r}", {"spec": {"replicas": 0}})["spec"]["replicas"]
            for rev in ("aaaa0000", "bbbb0000", rev_c)
            for r in ("prefill", "decode")
        )
        assert got == expected, given_


def test_an_update_mid_rollout_drains_the_newest_intermediate_revision_first() -> None:
    """TestMidRolloutABC / TestAsymmetricSizesCoordinatedDrain and e2e :1013: A -> B, and C
    while B is half up: B drains before A, every revision keeps all its roles or none, and
    C ends at the target."""
    world = fresh(
        role("prefill", 4, surge=1, unavailable=0), role("decode", 3, surge=2, unavailable=0)
    )
    world.converge()
    rev_a = revision_of(world)
    upgrade(world, "nginx:2")
    rev_b = revision_of(world)
    for _ in range(4):
        world.reconcile()
        world.ready()
    assert any(f"-{rev_b}-" in n and r > 0 for n, r in world.replicas().items())
    upgrade(world, "nginx:3")
    rev_c = revision_of(world)
    history = world.converge()
    for seen in history:
        for rev in (rev_a, rev_b):
            counts = [n for name, n in seen.items() if f"-{rev}-" in name]
            assert all(x == 0 for x in counts) or all(x > 0 for x in counts), (rev, seen)
    a_gone = next(
        i for i, s in enumerate(history) if sum(n for k, n in s.items() if rev_a in k) == 0
    )
    b_gone = next(
        i for i, s in enumerate(history) if sum(n for k, n in s.items() if rev_b in k) == 0
    )
    assert b_gone < a_gone
    assert world.replicas() == {f"svc-0-{rev_c}-prefill": 4, f"svc-0-{rev_c}-decode": 3}


def test_adding_and_removing_roles_roll_progressively() -> None:
    world = fresh(role("prefill", 2), role("decode", 2))
    world.converge()
    old = revision_of(world)
    world.ds["spec"]["roles"].append(role("gamma", 2))
    world.converge()
    assert names(world) == {
        f"svc-0-{revision_of(world)}-{r}" for r in ("prefill", "decode", "gamma")
    }
    assert not any(old in n for n in names(world))
    world.ds["spec"]["roles"] = world.ds["spec"]["roles"][:2]
    history = world.converge()
    assert names(world) == {f"svc-0-{revision_of(world)}-{r}" for r in ("prefill", "decode")}
    gamma = [sum(n for k, n in s.items() if k.endswith("-gamma")) for s in history]
    assert gamma[0] == 2 and gamma[-1] == 0 and all(a >= b for a, b in itertools.pairwise(gamma))


# --- legacy children (upstream v0.9.0: no slice in the name or labels) ------------------------


def legacy_world(slices: int = 1) -> World:
    world = fresh(role("prefill", 2), role("decode", 1), slices=slices)
    rev = revision_of(world)
    for r, n in (("prefill", 2), ("decode", 1)):
        name = legacy_lws_name("svc", rev, r)
        labels = {
            "app": f"svc-{r}",
            c.ROLE_LABEL: r,
            c.SET_NAME_LABEL: "svc",
            c.REVISION_LABEL: rev,
        }
        world.lws[name] = {
            "metadata": {
                "name": name,
                "uid": f"u-{name}",
                "labels": labels,
                "ownerReferences": [{"kind": c.KIND, "uid": UID, "controller": True}],
                "creationTimestamp": "2025-01-01T00:00:00Z",
            },
            "spec": {"replicas": n},
            "status": {"replicas": n, "readyReplicas": n, "updatedReplicas": n},
        }
        selector = {k: labels[k] for k in (c.SET_NAME_LABEL, c.ROLE_LABEL, c.REVISION_LABEL)}
        world.services[f"{name}-prv"] = {
            "metadata": {
                "name": f"{name}-prv",
                "uid": f"u-{name}-prv",
                "labels": dict(selector),
                "ownerReferences": [{"kind": c.KIND, "uid": UID, "controller": True}],
            },
            "spec": {"clusterIP": "None", "selector": selector},
        }
    return world


def test_legacy_children_are_adopted_in_place() -> None:
    world = legacy_world()
    assert [w.kind for w in world.plan().writes] == [c.KIND]  # the status only


def test_legacy_children_migrate_to_slice_names_on_a_rollout() -> None:
    world = legacy_world()
    upgrade(world, "nginx:2")
    world.converge()
    rev = revision_of(world)
    assert names(world) == {f"svc-0-{rev}-prefill", f"svc-0-{rev}-decode"}
    assert set(world.services) == {f"svc-0-{rev}-prefill-prv", f"svc-0-{rev}-decode-prv"}


def test_more_slices_keep_the_legacy_slice_and_narrow_its_service() -> None:
    """Upstream deletes and recreates a legacy slice 0 when slices go above 1 (its Service
    would select the new slices' pods); here it stays, and its Service selects its own LWS's
    pods only (docs/compatibility.md)."""
    world = legacy_world(slices=2)
    before = {n: o["metadata"]["uid"] for n, o in world.lws.items()}
    world.converge()
    rev = revision_of(world)
    assert {n: world.lws[n]["metadata"]["uid"] for n in before} == before
    assert names(world) - set(before) == {f"svc-1-{rev}-prefill", f"svc-1-{rev}-decode"}
    legacy_service = world.services[f"{legacy_lws_name('svc', rev, 'prefill')}-prv"]
    assert legacy_service["spec"]["selector"][lc.SET_NAME_LABEL] == legacy_lws_name(
        "svc", rev, "prefill"
    )


# --- External roles and their scalers -------------------------------------------------------


def test_an_external_role_gets_a_scaler_seeded_with_1_and_follows_it() -> None:
    world = fresh(role("prefill", 1, external=True), role("decode", 2))
    world.reconcile()
    scaler = world.scalers["svc-prefill"]
    assert scaler["spec"] == {"replicas": 1}
    assert scaler["metadata"]["labels"] == {c.SET_NAME_LABEL: "svc", c.ROLE_LABEL: "prefill"}
    assert scaler["metadata"]["ownerReferences"][0]["blockOwnerDeletion"] is True
    world.converge()
    status = world.scalers["svc-prefill"]["status"]
    assert status["replicas"] == 1
    assert status["selector"] == (
        f"{c.SET_NAME_LABEL}=svc,{c.ROLE_LABEL}=prefill,{lc.WORKER_INDEX_LABEL}=0"
    )
    assert (
        status["conditions"][0]["type"] == "Ready" and status["conditions"][0]["reason"] == "Bound"
    )
    world.scalers["svc-prefill"]["spec"]["replicas"] = 3  # an HPA writes /scale
    world.converge()
    rev = revision_of(world)
    assert world.replicas() == {f"svc-0-{rev}-prefill": 3, f"svc-0-{rev}-decode": 2}
    assert world.scalers["svc-prefill"]["status"]["replicas"] == 3


def test_static_to_external_seeds_the_scaler_with_the_running_groups() -> None:
    world = fresh(role("prefill", 3), role("decode", 1))
    world.converge()
    world.ds["spec"]["roles"][0]["scaling"] = {"mode": "External"}
    world.reconcile()
    assert world.scalers["svc-prefill"]["spec"]["replicas"] == 3
    world.converge()
    assert sorted(world.replicas().values()) == [1, 3]
    world.ds["spec"]["roles"][0].pop("scaling")
    world.reconcile()
    assert not world.scalers
    assert any(e.reason == "ScalerDeleted" for e in world.events)


def test_a_foreign_scaler_is_not_adopted() -> None:
    world = fresh(role("prefill", 1, external=True), role("decode", 1))
    world.scalers["svc-prefill"] = {
        "metadata": {"name": "svc-prefill", "uid": "other", "labels": {c.SET_NAME_LABEL: "svc"}},
        "spec": {"replicas": 5},
    }
    plan = world.plan()
    assert [e.reason for e in plan.events] == ["ScalerConflict"]
    assert not [w for w in plan.writes if w.kind == c.SCALER_KIND]
    world.reconcile()
    assert world.replicas() == {
        f"svc-0-{revision_of(world)}-prefill": 0,
        f"svc-0-{revision_of(world)}-decode": 1,
    }
    conditions = {x["type"]: x["status"] for x in world.ds["status"]["conditions"]}
    assert conditions == {"Progressing": "True"}


def test_an_external_role_does_not_shrink_the_new_revision_mid_rollout() -> None:
    world = fresh(role("prefill", 1, external=True), role("decode", 2))
    world.converge()
    world.scalers["svc-prefill"]["spec"]["replicas"] = 4
    world.converge()
    upgrade(world, "nginx:2")
    for _ in range(6):
        world.reconcile()
        world.ready()
    rev = revision_of(world)
    grown = world.lws[f"svc-0-{rev}-prefill"]["spec"]["replicas"]
    assert grown > 0
    world.scalers["svc-prefill"]["spec"]["replicas"] = 1  # the HPA shrinks meanwhile
    world.reconcile()
    assert world.lws[f"svc-0-{rev}-prefill"]["spec"]["replicas"] >= grown
    world.converge()
    assert world.lws[f"svc-0-{rev}-prefill"]["spec"]["replicas"] == 1  # released once done


# --- placement ---------------------------------------------------------------------------------


def test_exclusive_slice_and_topology_placement() -> None:
    world = fresh(
        role("prefill", 1),
        role("decode", 1),
        slices=2,
        placementPolicy={"type": "ExclusiveTopology", "topology": "zone"},
    )
    world.reconcile()
    rev = revision_of(world)
    spec = world.lws[f"svc-0-{rev}-prefill"]["spec"]["leaderWorkerTemplate"]["workerTemplate"][
        "spec"
    ]
    affinity = spec["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    anti = spec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert affinity == [
        {
            "labelSelector": {
                "matchExpressions": [
                    {"key": c.SET_NAME_LABEL, "operator": "In", "values": ["svc"]},
                    {"key": c.SLICE_LABEL, "operator": "In", "values": ["0"]},
                ]
            },
            "topologyKey": "zone",
        }
    ]
    spread, others = anti
    assert spread["labelSelector"]["matchExpressions"] == [
        {"key": c.SET_NAME_LABEL, "operator": "In", "values": ["svc"]},
        {"key": c.SLICE_LABEL, "operator": "Exists"},  # slice 0: legacy label-less pods are it
        {"key": c.SLICE_LABEL, "operator": "NotIn", "values": ["0"]},
    ]
    assert others["labelSelector"]["matchExpressions"] == [
        {"key": c.SET_NAME_LABEL, "operator": "Exists"},
        {"key": c.SET_NAME_LABEL, "operator": "NotIn", "values": ["svc"]},
        {"key": c.SLICE_LABEL, "operator": "Exists"},
    ]
    one = world.lws[f"svc-1-{rev}-decode"]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]
    (one_spread, _) = one["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert one_spread["labelSelector"]["matchExpressions"][1:] == [
        {"key": c.SLICE_LABEL, "operator": "NotIn", "values": ["1"]}
    ]


def test_placement_keeps_the_users_own_affinity() -> None:
    r = role("prefill", 1)
    user_term = {"labelSelector": {"matchLabels": {"x": "y"}}, "topologyKey": "rack"}
    r["spec"]["leaderWorkerTemplate"]["leaderTemplate"] = {
        "spec": {
            "containers": [{"name": "l", "image": "i"}],
            "affinity": {
                "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [user_term]}
            },
        }
    }
    world = fresh(
        r, role("decode", 1), placementPolicy={"type": "ExclusiveSlice", "topology": "zone"}
    )
    original = copy.deepcopy(world.ds)
    world.reconcile()
    rev = revision_of(world)
    leader = world.lws[f"svc-0-{rev}-prefill"]["spec"]["leaderWorkerTemplate"]["leaderTemplate"]
    terms = leader["spec"]["affinity"]["podAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert terms[0] == user_term and len(terms) == 2
    assert (
        len(
            leader["spec"]["affinity"]["podAntiAffinity"][
                "requiredDuringSchedulingIgnoredDuringExecution"
            ]
        )
        == 1
    )
    assert leader["metadata"]["labels"][c.SLICE_LABEL] == "0"
    assert world.ds["spec"] == original["spec"]  # the set's own spec is never changed


# --- ownership, status ---------------------------------------------------------------------------


def test_lws_of_someone_else_are_never_touched() -> None:
    world = fresh(role("prefill", 1), role("decode", 1))
    world.converge()
    rev = revision_of(world)
    intruder = copy.deepcopy(world.lws[f"svc-0-{rev}-prefill"])
    intruder["metadata"].update(name="svc-0-deadbeef-prefill", uid="x", ownerReferences=[])
    intruder["metadata"]["labels"][c.REVISION_LABEL] = "deadbeef"
    world.lws["svc-0-deadbeef-prefill"] = intruder
    assert not [w for w in world.plan().writes if w.name == "svc-0-deadbeef-prefill"]


def test_status_counts_every_slice_and_reports_available() -> None:
    world = fresh(role("prefill", 2), role("decode", 1), slices=2)
    world.reconcile()
    world.reconcile()
    conditions = {x["type"]: x for x in world.ds["status"]["conditions"]}
    assert conditions["Progressing"]["status"] == "True" and "Available" not in conditions
    world.converge()
    status = world.ds["status"]
    assert status["observedGeneration"] == 1
    assert status["roleStatuses"] == [
        {"name": "prefill", "replicas": 4, "readyReplicas": 4, "updatedReplicas": 4},
        {"name": "decode", "replicas": 2, "readyReplicas": 2, "updatedReplicas": 2},
    ]
    conditions = {x["type"]: x for x in status["conditions"]}
    assert conditions["Available"]["status"] == "True"
    assert conditions["Available"]["reason"] == "AllRolesReady"
    assert conditions["Progressing"]["status"] == "False"
    assert not world.plan().writes  # nothing changed: nothing written


def test_all_roles_at_zero_is_available_once_drained() -> None:
    world = fresh(role("prefill", 0), role("decode", 0))
    world.converge()
    assert {x["type"]: x["status"] for x in world.ds["status"]["conditions"]}["Available"] == "True"


# --- properties -------------------------------------------------------------------------------


@st.composite
def changes(draw: st.DrawFn) -> tuple[list[dict[str, Any]], int, list[tuple[str, list[int]]]]:
    n = draw(st.integers(2, 3))
    budgets = [(draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in range(n)]
    budgets = [(s, u) if s or u else (1, 0) for s, u in budgets]
    replicas = [draw(st.integers(1, 4)) for _ in range(n)]
    roles = [
        role(f"r{i}", replicas[i], surge=budgets[i][0], unavailable=budgets[i][1]) for i in range(n)
    ]
    change = st.tuples(
        st.sampled_from(["a", "b", "c"]), st.lists(st.integers(1, 4), min_size=n, max_size=n)
    )
    steps = draw(st.lists(change, min_size=1, max_size=3))
    return roles, draw(st.integers(1, 2)), steps


@settings(max_examples=60, deadline=None)
@given(changes())
def test_every_change_converges_to_the_spec_with_nothing_left_over(
    case: tuple[list[dict[str, Any]], int, list[tuple[str, list[int]]]],
) -> None:
    roles, slices, steps = case
    world = fresh(*roles, slices=slices)
    world.converge()
    for image, replicas in steps:
        upgrade(world, f"nginx:{image}")
        for r, n in zip(world.ds["spec"]["roles"], replicas, strict=True):
            r["spec"]["replicas"] = n
        # half-way through, the next change (an update mid-rollout) ...
        for _ in range(2):
            world.reconcile()
            world.ready()
    world.converge()
    rev = revision_of(world)
    want = {
        lws_name("svc", s, rev, r["name"]): r["spec"]["replicas"]
        for s in range(slices)
        for r in world.ds["spec"]["roles"]
    }
    assert world.replicas() == want
    assert set(world.services) == {f"{n}-prv" for n in want}
    assert {x["type"]: x["status"] for x in world.ds["status"]["conditions"]}["Available"] == "True"


@pytest.mark.parametrize("slices", [1, 2])
def test_each_slice_rolls_on_its_own(slices: int) -> None:
    world = fresh(role("prefill", 2), role("decode", 2), slices=slices)
    world.converge()
    upgrade(world, "nginx:2")
    world.converge()
    assert len(world.lws) == 2 * slices
