"""One reconcile of a DisaggregatedSet, decided: every write it makes, in order, from what is
observed (the set, its child LeaderWorkerSets, their Services, the role scalers).

The order is upstream's (``disaggregatedset_controller.go``): children of slices beyond
``spec.slices`` go; the scalers of External roles are created (seeded with the role's current
groups, or 1) and those of roles no longer External deleted; then each slice on its own:
revisions fully drained are deleted; if older revisions still have replicas, one rollout step
(``plan/ds/rollout.py``), waiting while the new revision's groups are not all ready, after a
first pass that records each old child's replicas (annotation ``initial-replicas``) and creates
the new revision's children with 0 replicas; else the current revision's children are created
or scaled to the desired replicas; then the private Services of the current revision once all
its roles have a ready group, and those of revisions no longer serving removed. Last the
scalers' status and the set's.

Nothing here reads the clock or the cluster: the reconcile (controller/ds/reconcile.py) applies
the writes and posts each write's event once it succeeded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from lws_operator.api import constants as lc
from lws_operator.api import ds_constants as c
from lws_operator.api.ds_models import DisaggregatedRole, DisaggregatedSet
from lws_operator.plan.ds import rollout
from lws_operator.plan.ds.objects import (
    Child,
    child_of,
    lws_body,
    lws_name,
    scaler_body,
    scaler_name,
    service_body,
    service_name,
)
from lws_operator.plan.ds.revision import compute_revision
from lws_operator.plan.ds.status import ds_status, scaler_status, status_patch
from lws_operator.plan.events import DELETE, UPDATE, Event, normal, warning
from lws_operator.plan.meta import is_controlled_by, labels_of, meta_of, name_of, uid_of
from lws_operator.plan.writes import Write

Obj = Mapping[str, Any]

# Upstream's event reasons.
ROLLING_UPDATE_STARTED = "RollingUpdateStarted"
ROLLING_UPDATE_COMPLETED = "RollingUpdateCompleted"
SCALING_UP = "ScalingUp"
SCALING_DOWN = "ScalingDown"
LWS_DELETED = "LWSDeleted"
SCALER_CREATED = "ScalerCreated"
SCALER_DELETED = "ScalerDeleted"
SCALER_CONFLICT = "ScalerConflict"
FAILED_CREATE = "FailedCreate"


@dataclass
class DsPlan:
    revision: str
    writes: list[Write] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    """Posted whatever the writes do."""
    waiting: list[int] = field(default_factory=list)
    """Slices whose rollout waits for the new revision's groups to be ready."""


def _revisions_newest_first(children: Sequence[Child]) -> list[str]:
    """Old revisions, the most recently created first (by their children's newest
    creationTimestamp; ties by name, for a stable order)."""
    newest: dict[str, str] = {}
    for ch in children:
        newest[ch.revision] = max(newest.get(ch.revision, ""), ch.created)
    return sorted(newest, key=lambda rev: (newest[rev], rev), reverse=True)


class _Planner:
    def __init__(
        self,
        ds: DisaggregatedSet,
        body: Obj,
        lws: Mapping[str, Obj],
        services: Mapping[str, Obj],
        scalers: Mapping[str, Obj],
        now: str,
        ready: Mapping[str, int],
    ) -> None:
        self.ds, self.now = ds, now
        self.ready = ready
        roles: Sequence[Mapping[str, Any]] = (body.get("spec") or {}).get("roles") or []
        self.old_status: Mapping[str, Any] = body.get("status") or {}
        self.revision = compute_revision(roles)
        self.plan = DsPlan(self.revision)
        self.roles: dict[str, DisaggregatedRole] = {r.name: r for r in ds.spec.roles}
        self.raw: dict[str, Mapping[str, Any]] = {str(r.get("name")): r for r in roles}
        parsed = [child_of(obj, ds.uid) for obj in lws.values()]
        self.all_children = [ch for ch in parsed if ch is not None]
        self.children = [ch for ch in self.all_children if not ch.deleting]
        self.taken = {name_of(obj) for obj in lws.values()}
        self.services = {
            name: svc for name, svc in services.items() if is_controlled_by(svc, ds.uid)
        }
        self.scalers = scalers
        self.role_scalers: dict[str, Obj] = {}
        self.slices = ds.spec.slices

    # ---- helpers ---------------------------------------------------------------------------
    def _write(self, write: Write) -> None:
        if write.verb == "delete":  # in the background, as upstream deletes
            write = replace(write, propagation="Background")
        self.plan.writes.append(write)

    def _delete_lws(self, ch: Child, note: str, action: str = DELETE) -> None:
        self._write(
            Write(
                "delete",
                "LeaderWorkerSet",
                ch.name,
                uid=ch.uid,
                event=normal(LWS_DELETED, action, note),
            )
        )
        self.children = [x for x in self.children if x.name != ch.name]

    def _scale(self, ch: Child, replicas: int, event: Event | None = None) -> None:
        body = {"spec": {"replicas": replicas}}
        self._write(Write("patch", "LeaderWorkerSet", ch.name, body=body, event=event))

    def _create_lws(self, role: str, slice_index: int, replicas: int) -> None:
        name = lws_name(self.ds.name, slice_index, self.revision, role)
        if name in self.taken:
            return  # being deleted, or someone else's: its removal (or a report) comes first
        body = lws_body(
            self.ds,
            self.raw[role],
            slice_index=slice_index,
            revision=self.revision,
            replicas=replicas,
        )
        self._write(Write("create", "LeaderWorkerSet", name, body=body))
        self.taken.add(name)

    # ---- desired replicas --------------------------------------------------------------------
    def desired(self, role: str, current: int) -> int:
        """Upstream's getTargetReplicas: a Static role's spec.replicas; an External role's
        scaler's spec.replicas, or ``current`` without a scaler."""
        spec_role = self.roles[role]
        if spec_role.external:
            scaler = self.role_scalers.get(role)
            if scaler is None:
                return current
            return int((scaler.get("spec") or {}).get("replicas") or 0)
        return spec_role.spec.replicas

    def budget(self, role: str) -> rollout.Budget:
        spec_role = self.roles.get(role)
        strategy = spec_role.spec.rollout_strategy if spec_role is not None else None
        ruc = strategy.rolling_update_configuration if strategy is not None else None
        if ruc is None:
            return rollout.DEFAULT
        return rollout.role_budget(ruc.max_surge, ruc.max_unavailable, self.desired(role, 0))

    # ---- the steps -----------------------------------------------------------------------------
    def run(self) -> DsPlan:
        self.removed_slices()
        self.reconcile_scalers()
        for slice_index in range(self.slices):
            self.slice(slice_index)
        self.statuses()
        return self.plan

    def removed_slices(self) -> None:
        for ch in list(self.children):
            if ch.slice is not None and ch.slice >= self.slices:
                self._delete_lws(ch, f"Deleted LWS {ch.name} for removed slice {ch.slice}")
        for name, svc in self.services.items():
            raw = labels_of(svc).get(c.SLICE_LABEL)
            if raw is not None and raw.isdigit() and int(raw) >= self.slices:
                self._write(Write("delete", "Service", name, uid=uid_of(svc)))

    def reconcile_scalers(self) -> None:
        external = [r.name for r in self.ds.spec.roles if r.external]
        for name, scaler in self.scalers.items():
            if not is_controlled_by(scaler, self.ds.uid):
                continue
            role = labels_of(scaler).get(c.ROLE_LABEL, "")
            if role in external and name == scaler_name(self.ds.name, role):
                self.role_scalers[role] = scaler
                continue
            note = f"Deleted scaler {name} (role {role} is no longer External)"
            self._write(
                Write(
                    "delete",
                    c.SCALER_KIND,
                    name,
                    uid=uid_of(scaler),
                    event=normal(SCALER_DELETED, DELETE, note),
                )
            )
        for role in external:
            if role in self.role_scalers:
                continue
            name = scaler_name(self.ds.name, role)
            if name in self.scalers:  # there, and not ours
                note = (
                    f"Scaler {name} exists but is not controlled by this DisaggregatedSet; "
                    "not adopting"
                )
                self.plan.events.append(warning(SCALER_CONFLICT, "Conflict", note))
                continue
            mine = [ch for ch in self.children if ch.role == role]
            seed = sum(ch.replicas for ch in mine) if mine else 1
            body = scaler_body(self.ds, role, seed)
            note = f"Created scaler {name} for role {role}"
            self._write(
                Write(
                    "create",
                    c.SCALER_KIND,
                    name,
                    body=body,
                    event=normal(SCALER_CREATED, "Create", note),
                )
            )
            self.role_scalers[role] = body

    def slice(self, s: int) -> None:
        mine = [ch for ch in self.children if ch.slice_index == s]
        completed = self.drained(s, mine)
        mine = [ch for ch in self.children if ch.slice_index == s]
        old = [ch for ch in mine if ch.revision != self.revision]
        new = {ch.role: ch for ch in mine if ch.revision == self.revision}
        if old and sum(ch.replicas for ch in old) > 0:
            if new:
                self.step(s, old, new)
            else:
                self.start_rollout(s, old)
        else:
            if completed and new:
                note = f"Completed rolling update to revision {self.revision}"
                self.plan.events.append(normal(ROLLING_UPDATE_COMPLETED, UPDATE, note))
            self.steady(s, new)
        self.slice_services(s, mine)

    def drained(self, s: int, mine: Sequence[Child]) -> bool:
        """Delete the old revisions whose every child has 0 replicas; True if there were."""
        by_revision: dict[str, list[Child]] = {}
        for ch in mine:
            if ch.revision != self.revision:
                by_revision.setdefault(ch.revision, []).append(ch)
        done = False
        for children in by_revision.values():
            if all(ch.replicas == 0 for ch in children):
                done = True
                for ch in children:
                    self._delete_lws(ch, f"Deleted drained LWS {ch.name}")
        return done

    def start_rollout(self, s: int, old: Sequence[Child]) -> None:
        note = f"Started rolling update to revision {self.revision}"
        self.plan.events.append(normal(ROLLING_UPDATE_STARTED, UPDATE, note))
        for ch in old:
            if ch.initial != ch.replicas:
                patch = {
                    "metadata": {"annotations": {c.INITIAL_REPLICAS_ANNOTATION: str(ch.replicas)}}
                }
                self._write(Write("patch", "LeaderWorkerSet", ch.name, body=patch))
        for role in self.roles:
            self._create_lws(role, s, 0)

    def step(self, s: int, old: Sequence[Child], new: Mapping[str, Child]) -> None:
        missing = [role for role in self.roles if role not in new]
        for role in missing:  # deleted meantime (upstream would wait for it forever)
            self._create_lws(role, s, 0)
        stable = all(
            ch.replicas == self.ready.get(ch.name, ch.ready)
            for ch in new.values()
            if ch.role in self.roles
        )
        if missing or not stable:
            self.plan.waiting.append(s)
            return
        removed = sorted({ch.role for ch in old} - set(self.roles))
        names = [*self.roles, *removed]
        initial = tuple(sum(ch.baseline for ch in old if ch.role == r) for r in names)
        current_old = tuple(sum(ch.replicas for ch in old if ch.role == r) for r in names)
        current_new = tuple(new[r].replicas if r in new else 0 for r in names)
        target = []
        for role, now_new in zip(names, current_new, strict=True):
            if role not in self.roles:
                target.append(0)
                continue
            want = self.desired(role, now_new)
            if self.roles[role].external:
                want = max(want, now_new)  # no shrinking the new revision mid-rollout
            target.append(want)
        budgets = [self.budget(r) for r in names]
        nxt = rollout.next_step(initial, current_old, current_new, tuple(target), budgets)
        if nxt is None:
            return
        for r, (before, after) in enumerate(zip(current_new, nxt.new, strict=True)):
            if names[r] in new and after > before:
                ch = new[names[r]]
                note = f"Scaling up {names[r]} LWS {ch.name} from {before} to {after} replicas"
                self._scale(ch, after, normal(SCALING_UP, UPDATE, note))
        order = _revisions_newest_first(old)
        revisions = [
            rollout.OldRevision(rev, {ch.role: ch.replicas for ch in old if ch.revision == rev})
            for rev in order
        ]
        drains = rollout.spread_drain(revisions, names, current_old, nxt.old)
        for rev in order:
            for ch in old:
                if ch.revision == rev and (rev, ch.role) in drains:
                    after = drains[(rev, ch.role)]
                    note = (
                        f"Scaling down {ch.role} LWS {ch.name} from {ch.replicas} to {after} "
                        "replicas"
                    )
                    self._scale(ch, after, normal(SCALING_DOWN, UPDATE, note))

    def steady(self, s: int, new: Mapping[str, Child]) -> None:
        for role in self.roles:
            ch = new.get(role)
            want = self.desired(role, ch.replicas if ch is not None else 0)
            if ch is None:
                self._create_lws(role, s, want)
            elif ch.replicas != want:
                self._scale(ch, want)

    def slice_services(self, s: int, observed: Sequence[Child]) -> None:
        """The private Services of slice ``s``: made for the current revision once every role
        has a ready group there (from the children as observed, before this pass's writes),
        and removed for revisions that no longer serve (not every role ready)."""
        live = [ch for ch in observed if not ch.deleting]
        by_revision: dict[str, dict[str, Child]] = {}
        for ch in live:
            by_revision.setdefault(ch.revision, {})[ch.role] = ch

        def serving(rev: str) -> bool:
            group = by_revision.get(rev, {})
            return all(role in group and group[role].ready >= 1 for role in self.roles)

        if not serving(self.revision):
            return  # keep what serves until the new revision can
        legacy_selector = self.slices > 1
        for role in self.roles:
            ch = by_revision[self.revision][role]
            name = service_name(ch.name)
            body = service_body(self.ds, ch)
            if ch.slice is None and legacy_selector:
                # A child from before slices is slice 0 without the label: its Service must
                # not also select the other slices' pods of the same revision.
                body["spec"]["selector"][lc.SET_NAME_LABEL] = ch.name
            selector = body["spec"]["selector"]
            if name not in self.services:
                self._write(Write("create", "Service", name, body=body))
            elif (
                ch.slice is None
                and legacy_selector
                and selector != (self.services[name].get("spec") or {}).get("selector")
            ):
                self._write(Write("patch", "Service", name, body={"spec": {"selector": selector}}))
        keep = {rev for rev in by_revision if serving(rev)} | {self.revision}
        for name, svc in self.services.items():
            labels = labels_of(svc)
            raw = labels.get(c.SLICE_LABEL)
            in_slice = str(s) == raw if raw else s == 0
            if in_slice and labels.get(c.REVISION_LABEL) not in keep:
                self._write(Write("delete", "Service", name, uid=uid_of(svc)))

    def statuses(self) -> None:
        for role, scaler in self.role_scalers.items():
            if "uid" not in meta_of(scaler):
                continue  # created in this pass: its status comes with the next
            replicas = sum(ch.status_replicas for ch in self.all_children if ch.role == role)
            new = scaler_status(scaler, ds=self.ds.name, role=role, replicas=replicas, now=self.now)
            patch = status_patch(scaler.get("status") or {}, new)
            if patch is not None:
                self._write(Write("status", c.SCALER_KIND, name_of(scaler), body=patch))
        desired: dict[str, int | None] = {}
        for role in self.roles:
            if self.roles[role].external and role not in self.role_scalers:
                desired[role] = None
            else:
                desired[role] = self.desired(role, 0)
        old = self.old_status
        new = ds_status(
            roles=list(self.roles),
            children=self.all_children,
            revision=self.revision,
            desired=desired,
            slices=self.slices,
            generation=int(self.ds.metadata.get("generation") or 0),
            old=old,
            now=self.now,
        )
        patch = status_patch(old, new)
        if patch is not None:
            self._write(Write("status", c.KIND, self.ds.name, body=patch))


def plan_disaggregated_set(
    ds: DisaggregatedSet,
    *,
    body: Obj,
    lws: Mapping[str, Obj],
    services: Mapping[str, Obj],
    scalers: Mapping[str, Obj],
    now: str,
    ready: Mapping[str, int] | None = None,
) -> DsPlan:
    """Every write of one reconcile of ``ds`` (``body``: the object as stored, whose
    ``spec.roles`` the revision is hashed from and whose status is compared). ``lws`` are the
    LeaderWorkerSets and ``services`` the Services labelled with the set's name, ``scalers``
    the role scalers labelled with it or named like one of its scalers, all by name.

    ``ready``: ready groups per child, as the operator's own LeaderWorkerSet controller sees
    them now (its status says the same, up to a second later, compatibility R9): a rollout
    step waits for them (upstream waits for ``status.readyReplicas``)."""
    return _Planner(ds, body, lws, services, scalers, now, ready or {}).run()


def failed_create(kind: str, name: str, message: str) -> Event:
    return warning(FAILED_CREATE, "Create", f"Failed to create {kind} {name}: {message}")
