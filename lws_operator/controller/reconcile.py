"""One reconcile of one LeaderWorkerSet: read the cached state, let the pure planners decide,
write only the difference. Level-triggered and idempotent: any reconcile may be cut short at
any line, and the next one (woken by the resulting events) finishes the job.

Order: revision → leader StatefulSet → Services → each group's worker StatefulSet → status →
revision history. Returns seconds after which to look again, or None.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from lws_operator.api import constants as c
from lws_operator.api.models import LeaderWorkerSet, LeaderWorkerSetSpec, StartupPolicy
from lws_operator.api.models import SubdomainPolicy as Subdomain
from lws_operator.controller.cache import Cache, Observed
from lws_operator.controller.informer import Key
from lws_operator.controller.metrics import NoMetrics, ReconcileMetrics
from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.events import NORMAL, WARNING, EventRecorder
from lws_operator.kube.paths import resource_path
from lws_operator.plan import claims, gang
from lws_operator.plan import revision as rev
from lws_operator.plan import statefulsets as sts_plan
from lws_operator.plan.diff import contains
from lws_operator.plan.groups import Group, is_deleting, labels_of, observe_groups, pod_ready
from lws_operator.plan.meta import controller_of, is_controlled_by
from lws_operator.plan.restart import (
    Recreate,
    next_overdue,
    node_lost,
    overdue_terminating,
    plan_recreations,
)
from lws_operator.plan.rollout import GroupState, RolloutInput, plan_rollout
from lws_operator.plan.services import replica_service, shared_service
from lws_operator.plan.status import (
    COUNTERS_WRITE_INTERVAL,
    ObservedGroup,
    compute_status,
    counters_only,
)

log = logging.getLogger(__name__)

STS = "statefulsets"
# How soon to look again when waiting on something no watch tells us about.
RETRY_SOON = 1.0


@dataclass
class Reconciler:
    kube: Kube
    cache: Cache
    events: EventRecorder
    # (uid, generation) of LWS objects already reported invalid: one Warning per generation.
    _reported_invalid: set[tuple[str, int]] = field(default_factory=set)
    # Gang scheduling: "kubernetes" or "volcano" creates a PodGroup per group (plan/gang.py).
    gang_provider: str | None = None
    # (uid, revision key) of LWS objects already told their new claims cannot be applied.
    _reported_claims: set[tuple[str, str]] = field(default_factory=set)
    metrics: ReconcileMetrics = field(default_factory=NoMetrics)
    # Semantic revision matches, by (revision uid, its resourceVersion, LWS uid, generation):
    # both sides are re-validated to compare, and every pod event reconciles the LWS.
    _matches: dict[tuple[str, str, str, int], bool] = field(default_factory=dict)
    # When each LWS's status was last written (monotonic seconds): counters-only changes are
    # coalesced to one write per COUNTERS_WRITE_INTERVAL.
    status_written: dict[Key, float] = field(default_factory=dict)

    def revision_matches(self, revision: dict[str, Any], lws: LeaderWorkerSet) -> bool:
        rmeta, lmeta = revision.get("metadata") or {}, lws.metadata
        key = (
            str(rmeta.get("uid")),
            str(rmeta.get("resourceVersion")),
            str(lmeta.get("uid")),
            int(lmeta.get("generation") or 0),
        )
        if (hit := self._matches.get(key)) is not None:
            return hit
        if len(self._matches) >= 4096:
            self._matches.clear()
        result = self._matches[key] = rev.matches(revision, lws.spec)
        return result

    async def __call__(self, key: Key) -> float | None:
        await self.cache.wait_synced()
        obs = self.cache.observe(key)
        if obs.lws is None or is_deleting(obs.lws):
            self.metrics.forget(key)
            self.cache.forget(key)
            self.status_written.pop(key, None)
            return None
        try:
            lws = LeaderWorkerSet.model_validate(obs.lws)
        except ValidationError as e:
            await self._report_invalid(obs.lws, e)
            return None
        try:
            return await _Pass(self, lws, obs, self.cache.lost_pods(key)).run()
        except ApiError as e:
            if e.status == 403 and "being terminated" in e.message:
                return None  # its namespace is going away, and everything in it
            if e.status == 404 and (
                f'namespaces "{lws.namespace}" not found' in e.message
                or f'{c.PLURAL}.{c.GROUP} "{lws.name}" not found' in e.message
            ):
                return None  # it, or its namespace, is gone already (the cache has yet to see)
            raise

    async def _report_invalid(self, body: dict[str, Any], error: ValidationError) -> None:
        meta = body.get("metadata") or {}
        mark = (str(meta.get("uid")), int(meta.get("generation") or 0))
        if mark in self._reported_invalid:
            return
        self._reported_invalid.add(mark)
        first = error.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        note = f"cannot reconcile: {where}: {first.get('msg')}"
        log.warning("%s/%s %s", meta.get("namespace"), meta.get("name"), note)
        await self.events.post(body, WARNING, "InvalidSpec", "Reconcile", note)


def _sts_partition(sts: dict[str, Any] | None) -> int:
    strategy = ((sts or {}).get("spec") or {}).get("updateStrategy") or {}
    return int((strategy.get("rollingUpdate") or {}).get("partition") or 0)


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Pass:
    """The state of one reconcile pass."""

    def __init__(
        self,
        r: Reconciler,
        lws: LeaderWorkerSet,
        obs: Observed,
        lost_pods: list[tuple[str, str]],
    ) -> None:
        self.kube, self.events, self.metrics = r.kube, r.events, r.metrics
        self.lost_pods = lost_pods
        self.reconciler = r
        self.lws, self.obs = lws, obs
        self.name, self.ns = lws.name, lws.namespace
        self.uid = str(lws.metadata.get("uid", ""))
        self.body = obs.lws or {}
        self.retry: float | None = None

    def matches(self, revision: dict[str, Any]) -> bool:
        return self.reconciler.revision_matches(revision, self.lws)

    def _again(self, seconds: float) -> None:
        self.retry = seconds if self.retry is None else min(self.retry, seconds)

    def _path(self, plural: str, name: str | None = None, api: str = "apps/v1") -> str:
        return resource_path(api, plural, namespace=self.ns, name=name)

    async def run(self) -> float | None:
        leader_sts = self.obs.statefulsets.get(self.name)
        if leader_sts is not None and not is_controlled_by(leader_sts, self.uid):
            await self.events.post(
                self.body,
                WARNING,
                "FailedCreate",
                "Create",
                f"StatefulSet {self.name} exists and is not owned by this LeaderWorkerSet; "
                "delete or rename it",
            )
            return None
        if leader_sts is not None and is_deleting(leader_sts):
            return 5.0
        key, changed = await self._revision(leader_sts)
        spec = self.lws.spec
        size = spec.leader_worker_template.size
        sts_replicas = int(((leader_sts or {}).get("spec") or {}).get("replicas") or 0)
        leader_uid = (leader_sts or {}).get("metadata", {}).get("uid")
        groups = observe_groups(
            lws_name=self.name,
            count=sts_replicas,
            leader_sts_uid=leader_uid,
            pods=self.obs.pods,
            statefulsets=self.obs.statefulsets,
        )
        plan = plan_rollout(self._rollout_input(leader_sts, groups, key, changed, size))
        await self._apply_leader(
            leader_sts, key, plan.replicas, plan.partition, plan.sts_max_unavailable
        )
        await self._services()
        recreated = await self._recreate_failed_groups(groups, size)
        for group in groups:
            if group.index not in recreated:
                await self._group(group)
        await self._release_stuck_pods()
        done = await self._status(leader_sts, groups, key, size)
        if done:
            await self._truncate_history(key)
        return self.retry

    # ---- revisions -------------------------------------------------------------------------
    async def _revision(self, leader_sts: dict[str, Any] | None) -> tuple[str, bool]:
        """The key of the revision the groups should run, creating the revision if needed, and
        whether it differs from the leader StatefulSet's (a rollout starts)."""
        owned = [
            r
            for r in self.obs.revisions.values()
            if r.get("metadata", {}).get("ownerReferences") in (None, [])
            or is_controlled_by(r, self.uid)
        ]
        by_key: dict[str, list[dict[str, Any]]] = {}
        for r in owned:
            by_key.setdefault(labels_of(r).get(c.REVISION_KEY, ""), []).append(r)
        sts_key = labels_of(leader_sts).get(c.REVISION_KEY) if leader_sts else None
        spec = self.lws.spec
        if sts_key is not None and sts_key in by_key:
            if any(self.matches(r) for r in by_key[sts_key]):
                return sts_key, False
        elif sts_key is not None:
            # A StatefulSet from a controller that kept no revision for its key: record the
            # current spec under that key, so nothing rolls (contract 4.14).
            await self._create_revision(sts_key, owned, "Creating missing revision with key %s")
            return sts_key, False
        key = rev.revision_key(spec)
        for k, revisions in by_key.items():
            if any(self.matches(r) for r in revisions):
                key = k  # an existing revision (ours or a predecessor's) holds this spec
                break
        else:
            note = (
                "Creating revision with key %s for updated LWS"
                if leader_sts
                else "Creating revision with key %s for a newly created LeaderWorkerSet"
            )
            await self._create_revision(key, owned, note)
        return key, sts_key is not None and key != sts_key

    async def _create_revision(self, key: str, owned: list[dict[str, Any]], note: str) -> None:
        number = 1 + max((int(r.get("revision") or 0) for r in owned), default=0)
        body = rev.controller_revision(
            lws_name=self.name,
            namespace=self.ns,
            lws_uid=self.uid,
            key=key,
            number=number,
            content=rev.revision_content(self.lws.spec),
        )
        try:
            await self.kube.create(self._path("controllerrevisions"), body)
        except ApiError as e:
            if not e.already_exists:
                raise
        await self.events.post(self.body, NORMAL, "CreatingRevision", "Create", note % key)

    def _revision_spec(self, key: str) -> LeaderWorkerSetSpec | None:
        for r in self.obs.revisions.values():
            if labels_of(r).get(c.REVISION_KEY) == key:
                return rev.spec_at_revision(self.lws.spec, r)
        return None

    async def _truncate_history(self, key: str) -> None:
        for r in self.obs.revisions.values():
            if labels_of(r).get(c.REVISION_KEY) != key and is_controlled_by(r, self.uid):
                await self.kube.delete(self._path("controllerrevisions", r["metadata"]["name"]))

    # ---- leader StatefulSet ----------------------------------------------------------------
    def _rollout_input(
        self,
        leader_sts: dict[str, Any] | None,
        groups: list[Group],
        key: str,
        changed: bool,
        size: int,
    ) -> RolloutInput:
        cfg = self.lws.spec.rollout_strategy.rolling_update_configuration
        sts_spec = (leader_sts or {}).get("spec") or {}
        annotation = (
            ((leader_sts or {}).get("metadata") or {})
            .get("annotations", {})
            .get(c.REPLICAS_ANNOTATION)
        )
        return RolloutInput(
            replicas=self.lws.spec.replicas,
            partition=cfg.partition,
            max_unavailable=cfg.max_unavailable,
            max_surge=cfg.max_surge,
            sts_exists=leader_sts is not None,
            sts_replicas=int(sts_spec.get("replicas") or 0),
            sts_partition=_sts_partition(leader_sts),
            replicas_annotation=int(annotation) if str(annotation or "").isdigit() else None,
            revision_changed=changed,
            states=[GroupState(ready=g.ready(size), updated=g.updated(size, key)) for g in groups],
        )

    async def _apply_leader(
        self,
        current: dict[str, Any] | None,
        key: str,
        replicas: int,
        partition: int,
        max_unavailable: int,
    ) -> None:
        desired = sts_plan.leader_statefulset(
            self.lws,
            revision_key=key,
            replicas=replicas,
            partition=partition,
            max_unavailable=max_unavailable,
        )
        if current is not None and not await self._claims_allowed(current, desired, key):
            return
        if current is not None and contains(current, sts_plan.as_served(desired, current)):
            return
        try:
            await self.kube.apply(self._path(STS, self.name), desired)
        except ApiError as e:
            verb = "create" if current is None else "update"
            await self.events.post(
                self.body,
                WARNING,
                f"Failed{verb.capitalize()}",
                verb.capitalize(),
                f"Failed to {verb} leader statefulset {self.name}: {e.message}",
            )
            raise
        if current is None:
            await self.events.post(
                self.body,
                NORMAL,
                "GroupsProgressing",
                "Create",
                f"Created leader statefulset {self.name}",
            )
            return
        old = int(
            (
                ((current.get("spec") or {}).get("updateStrategy") or {}).get("rollingUpdate") or {}
            ).get("partition")
            or 0
        )
        if partition < old:
            note = (
                f"Updating replica {partition}"
                if partition == old - 1
                else f"Updating replicas {partition} to {old - 1} (inclusive)"
            )
            await self.events.post(self.body, NORMAL, "GroupsUpdating", "Update", note)

    async def _claims_allowed(
        self, current: dict[str, Any], desired: dict[str, Any], key: str
    ) -> bool:
        """Kubernetes forbids changing a StatefulSet's volumeClaimTemplates (plan/claims.py):
        with the same claim names the leader StatefulSet keeps its own (``desired`` is changed
        in place) and the rest is applied; with claims added, removed or renamed nothing is
        applied. One Warning event per revision."""
        conflict = claims.claims_conflict(desired, current)
        if conflict is None:
            return True
        if conflict == claims.KEEP:
            claims.keep_claims(desired, current)
            reason = "VolumeClaimTemplatesKept"
            note = (
                f"volumeClaimTemplates changed, but Kubernetes does not allow changing them on "
                f"StatefulSet {self.name}: leader pods keep the existing claims; worker "
                "StatefulSets created from now on get the new ones"
            )
        else:
            reason = "FailedUpdate"
            note = (
                "volumeClaimTemplates of an existing LeaderWorkerSet cannot gain, lose or rename "
                f"claims (Kubernetes does not allow changing them on StatefulSet {self.name}); "
                "nothing is applied, scaling included, until the claim names are restored; or "
                "delete and recreate the LeaderWorkerSet"
            )
        mark = (self.uid, key)
        if mark not in self.reconciler._reported_claims:
            self.reconciler._reported_claims.add(mark)
            log.warning("%s/%s: %s", self.ns, self.name, note)
            await self.events.post(self.body, WARNING, reason, "Update", note)
        return conflict == claims.KEEP

    # ---- Services --------------------------------------------------------------------------
    async def _services(self) -> None:
        if self.lws.spec.network_config.subdomain_policy != Subdomain.SHARED:
            return
        if self.name in self.obs.services:
            return
        await self._create(
            resource_path("v1", "services", namespace=self.ns),
            shared_service(self.name, self.ns, self.uid),
            "Failed to create headless service for error: %s",
        )

    async def _create(self, path: str, body: dict[str, Any], failure: str) -> bool:
        """Create; an object that already exists counts as created. Returns True when this
        call created it."""
        try:
            await self.kube.create(path, body)
        except ApiError as e:
            if e.already_exists:
                return False
            await self.events.post(
                self.body, WARNING, "FailedCreate", "Create", failure % e.message
            )
            raise
        return True

    # ---- one group ---------------------------------------------------------------------------
    async def _group(self, group: Group) -> None:
        leader = group.leader
        if leader is None or is_deleting(leader):
            return
        leader_name = leader["metadata"]["name"]
        leader_key = group.leader_key or ""
        spec = self._revision_spec(leader_key)
        if spec is None:
            self._again(RETRY_SOON)  # its revision is being written
            return
        if spec.network_config.subdomain_policy == Subdomain.UNIQUE_PER_REPLICA and (
            leader_name not in self.obs.services
        ):
            await self._create(
                resource_path("v1", "services", namespace=self.ns),
                replica_service(self.name, {**leader, "metadata": {**leader["metadata"]}}),
                "Failed to create headless service for error: %s",
            )
        if self.reconciler.gang_provider is not None and not await self._pod_group(leader, spec):
            return
        if spec.leader_worker_template.size == 1 or group.workers is not None:
            return
        stale = self.obs.statefulsets.get(leader_name)
        if stale is not None:
            # The previous leader's, whose garbage collection is pending: delete it now so the
            # new leader's workers need not wait (its deletion wakes us again). Foreground, as
            # the garbage collector would: its pods go first (Kueue ungates orphans at once).
            owner = controller_of(stale)
            if not is_deleting(stale) and owner is not None and owner.get("kind") == "Pod":
                await self.kube.delete(
                    self._path(STS, leader_name),
                    propagation="Foreground",
                    preconditions={"uid": stale["metadata"]["uid"]},
                )
            elif owner is None or owner.get("kind") != "Pod":
                await self._foreign_workers(leader_name)
            return
        if self.lws.spec.startup_policy == StartupPolicy.LEADER_READY and not pod_ready(leader):
            return  # the leader's readiness change wakes us
        # Under a gang the leader waits for its workers: they follow it by affinity instead.
        topology = self.lws.annotations.get(c.EXCLUSIVE_KEY_ANNOTATION)
        follow = bool(self.reconciler.gang_provider and topology)
        follow = follow and not (leader.get("spec") or {}).get("nodeName")
        node_selector = {} if follow else await self._exclusive_node_selector(leader)
        if node_selector is None:
            return
        body = sts_plan.worker_statefulset(
            self.lws,
            spec,
            leader=leader,
            node_selector=node_selector,
            leader_requests_tpus=bool(leader.get("spec", {}).get("requestsTpus")),
        )
        if follow and topology:
            gang.follow_leader(body, leader, topology)
        created = await self._create(
            self._path(STS),
            body,
            f"Failed to create worker statefulset for leader pod {leader_name}: %s",
        )
        if created:
            await self.events.post(
                self.body,
                NORMAL,
                "GroupsProgressing",
                "Create",
                f"Created worker statefulset for leader pod {leader_name}",
            )
            return
        # It exists but the cache does not show it as this leader's: ours not seen yet, or
        # someone else's (without our labels), which we must neither adopt nor delete.
        existing = await self.kube.get_or_none(self._path(STS, leader_name))
        owner = controller_of(existing) if existing is not None else None
        if existing is not None and (owner is None or owner.get("kind") != "Pod"):
            await self._foreign_workers(leader_name)

    async def _foreign_workers(self, leader_name: str) -> None:
        """A StatefulSet named like the group's workers that no leader pod owns blocks the
        group: report it (Warning) and look again later (its deletion may not wake us)."""
        note = (
            f"StatefulSet {leader_name} exists and is not owned by leader pod {leader_name}; "
            "delete or rename it"
        )
        await self.events.post(self.body, WARNING, "FailedCreate", "Create", note)
        self._again(15.0)

    async def _pod_group(self, leader: dict[str, Any], spec: LeaderWorkerSetSpec) -> bool:
        """Create the group's PodGroup when it does not exist, before the worker StatefulSet
        (contract 3.5); never updated. False when it could not be created."""
        provider = self.reconciler.gang_provider or ""
        name = gang.pod_group_name(self.name, leader)
        if name in self.obs.podgroups:
            return True
        api = gang.api_version(provider)
        try:
            body = gang.pod_group(provider, self.lws, spec, leader)
        except ValueError as e:  # a quantity the API server would not have accepted
            await self.events.post(
                self.body, WARNING, "FailedCreate", "Create", f"PodGroup {name}: {e}"
            )
            return False
        try:
            await self.kube.create(resource_path(api, gang.PLURAL, namespace=self.ns), body)
        except ApiError as e:
            if e.already_exists:
                return True
            hint = f" (is the {api} PodGroup API served?)" if e.status == 404 else ""
            note = f"Failed to create PodGroup {name}: {e.message}{hint}"
            await self.events.post(self.body, WARNING, "FailedCreate", "Create", note)
            self._again(30.0)
            return False
        return True

    async def _exclusive_node_selector(self, leader: dict[str, Any]) -> dict[str, str] | None:
        """With exclusive placement, the workers follow their leader into its topology domain:
        a nodeSelector on the leader node's label. None while the leader is not scheduled."""
        topology = self.lws.annotations.get(c.EXCLUSIVE_KEY_ANNOTATION)
        if topology is None:
            return {}
        node_name = (leader.get("spec") or {}).get("nodeName")
        if not node_name:
            return None  # the leader's scheduling wakes us
        node = await self.kube.get_or_none(resource_path("v1", "nodes", name=node_name))
        value = ((node or {}).get("metadata") or {}).get("labels", {}).get(topology)
        if value is None:
            note = f"node {node_name} of leader pod {leader['metadata']['name']} " + (
                "does not exist" if node is None else f"has no topology label {topology}"
            )
            await self.events.post(self.body, WARNING, "FailedCreate", "Create", note)
            self._again(30.0)
            return None
        return {topology: value}

    # ---- failures ----------------------------------------------------------------------------
    async def _recreate_failed_groups(self, groups: list[Group], size: int) -> set[int]:
        """Recreate every group a pod failure broke; returns their indices."""
        plans = plan_recreations(
            policy=self.lws.spec.leader_worker_template.restart_policy,
            lws_annotations=self.lws.annotations,
            size=size,
            groups=groups,
            pods=self.obs.pods,
            lost_pods=self.lost_pods,
        )
        for plan in plans:
            await self._recreate(plan)
        return {p.index for p in plans}

    async def _recreate(self, plan: Recreate) -> None:
        """Delete the whole group: the leader first (its StatefulSet makes a new one at once),
        then together the worker StatefulSet (in the foreground: gone once its pods are, and
        the new leader's follows without waiting for the garbage collector to find it) and the
        worker pods (so they start terminating now). Upstream deletes the leader in the
        foreground and waits for every dependent to be gone.

        The leader's deletion is the commit point: if it fails nothing else is touched, so the
        next pass still sees the failure and recreates the whole group (deleting workers first
        and then failing on the leader would leave a half-recreated group with the failed pod's
        evidence gone). Once it is deleted, everything else of the group is the garbage
        collector's anyway: a failed deletion of the rest is only logged."""
        pods_path = resource_path("v1", "pods", namespace=self.ns)
        leader = plan.leader
        # The worker StatefulSet in the foreground: it stays (and makes no pod) until its pods
        # are gone, as Kueue ungates at once a pod whose StatefulSet it cannot find.
        rest = []
        if plan.workers is not None:
            path = self._path(STS, plan.workers["metadata"]["name"])
            rest.append((path, plan.workers, "Foreground"))
        rest += [
            (f"{pods_path}/{p['metadata']['name']}", p, "Background")
            for p in plan.members
            if p is not leader and not is_deleting(p)
        ]

        def delete(path: str, obj: dict[str, Any], propagation: str) -> Awaitable[Any]:
            preconditions = {"uid": obj["metadata"]["uid"]}
            return self.kube.delete(path, propagation=propagation, preconditions=preconditions)

        await delete(f"{pods_path}/{leader['metadata']['name']}", leader, "Background")
        results = await asyncio.gather(*(delete(*r) for r in rest), return_exceptions=True)
        for (path, _, _), result in zip(rest, results, strict=True):
            if isinstance(result, ApiError):
                log.warning(
                    "%s/%s: deleting %s failed (%s); the garbage collector removes it with "
                    "the old leader",
                    self.ns,
                    self.name,
                    path.rsplit("/", 1)[-1],
                    result.message,
                    extra={"group": plan.index},
                )
            elif isinstance(result, BaseException):
                raise result
        log.info(
            "%s/%s: %s (%s)", self.ns, self.name, plan.note, plan.why, extra={"group": plan.index}
        )
        self.metrics.group_recreated(self.ns, self.name, plan.why)
        await self.events.post(self.body, NORMAL, "RecreateGroup", "Delete", plan.note)

    async def _release_stuck_pods(self) -> None:
        """Force-delete pods stuck terminating on a lost node (upstream #508): their kubelet is
        gone, so they would block the names their group needs forever."""
        now = datetime.datetime.now(datetime.UTC)
        for pod, _ in overdue_terminating(self.obs.pods, now):
            node_name = (pod.get("spec") or {}).get("nodeName")
            node = (
                await self.kube.get_or_none(resource_path("v1", "nodes", name=node_name))
                if node_name
                else None
            )
            if node_name and not node_lost(node):
                continue
            name = pod["metadata"]["name"]
            await self.kube.delete(
                resource_path("v1", "pods", namespace=self.ns, name=name),
                grace_period_seconds=0,
                preconditions={"uid": pod["metadata"]["uid"]},
            )
            note = f"Pod {name} was stuck terminating on lost node {node_name}; force-deleted it"
            await self.events.post(self.body, WARNING, "ForceDeletedStuckPod", "Delete", note)
        if (wait := next_overdue(self.obs.pods, now)) is not None:
            self._again(wait + 1)

    # ---- status ------------------------------------------------------------------------------
    async def _status(
        self, leader_sts: dict[str, Any] | None, groups: list[Group], key: str, size: int
    ) -> bool:
        spec = self.lws.spec
        observed = [
            ObservedGroup(
                index=g.index,
                leader_ready=g.leader_ready,
                leader_updated=g.leader_key == key,
                workers_present=size == 1 or g.workers is not None,
                workers_ready=size == 1 or g.workers_ready,
                workers_updated=size == 1 or g.workers_key == key,
            )
            for g in groups
            if g.leader is not None
        ]
        old = self.body.get("status") or {}
        result = compute_status(
            groups=observed,
            replicas=spec.replicas,
            partition=spec.rollout_strategy.rolling_update_configuration.partition,
            size=size,
            sts_status_replicas=int(((leader_sts or {}).get("status") or {}).get("replicas") or 0),
            generation=int(self.lws.metadata.get("generation") or 0),
            lws_name=self.name,
            old_conditions=list(old.get("conditions") or []),
            now=_now(),
        )
        if not contains(old, result.status) or not contains(result.status, old):
            written = self.reconciler.status_written
            now, last = time.monotonic(), written.get((self.ns, self.name))
            wait = 0.0 if last is None else last + COUNTERS_WRITE_INTERVAL - now
            if wait > 0 and not result.events and counters_only(old, result.status):
                self._again(wait)  # written with whatever the counters are by then
            else:
                path = resource_path(
                    c.API_VERSION, c.PLURAL, namespace=self.ns, name=self.name, subresource="status"
                )
                await self.kube.patch(path, {"status": result.status}, kind="merge")
                written[(self.ns, self.name)] = now
                for event in result.events:
                    await self.events.post(self.body, NORMAL, event.reason, "Update", event.note)
        self.metrics.groups_observed(
            self.ns, self.name, observed, spec.replicas, result.update_done
        )
        return result.update_done
