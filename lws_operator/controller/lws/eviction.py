"""The eviction webhook: answers AdmissionReviews of ``pods/eviction`` for LWS pods, and keeps
the ValidatingWebhookConfiguration that sends them here.

The decisions are pure (:mod:`lws_operator.plan.lws.disruption`); this module reads what they need
(the pod, read live; the LWS, its groups and nodes from the cache) and records a move on the
leader StatefulSet before answering. Every replica serves it: the record is written with the
resourceVersion it was read at, so concurrent evictions (a drain evicts every pod of a node at
once) and replicas never both take the last place in the budget.

An eviction reaches admission as an Eviction object, without the pod's labels, so the webhook
cannot select LWS pods with an objectSelector. It selects them by name instead, with a CEL
``matchCondition`` listing the covered LeaderWorkerSets (``plan.disruption.
eviction_match_expression``), and fails closed: while the operator is down, evictions of LWS
pods are refused and no other pod depends on it. The reconcile covers an LWS before it creates
any of its objects (:meth:`EvictionCoverage.cover`).
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import json
import logging
import time
from typing import Any

from pydantic import ValidationError

from lws_operator.api import constants as c
from lws_operator.api.models import LeaderWorkerSet
from lws_operator.controller.lws.cache import Cache
from lws_operator.controller.runtime.informer import Key
from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.paths import resource_path
from lws_operator.plan.keys import OwnerKey
from lws_operator.plan.lws import disruption as d
from lws_operator.plan.meta import annotations_of, labels_of

log = logging.getLogger(__name__)

EVICTION_WEBHOOK_PATH = "/validate--v1-pod-eviction"
CONFIGURATION_NAME = "lws-eviction-webhook-configuration"
WEBHOOK_NAME = "vpodeviction.lws.x-k8s.io"
COVERED_ANNOTATION = "lws-operator.x-k8s.io/covered"
_CONFIG_PATH = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
# A conflicting write of the state (another eviction, the reconcile) is read again this often.
ATTEMPTS = 5
# The configuration is read again at most this often to repair it, e.g. after a re-applied
# install manifest reset its matchConditions.
VERIFY_SECONDS = 60.0


def eviction_webhook(client_config: dict[str, Any], ca_bundle: bytes | None) -> dict[str, Any]:
    """The webhook entry, without its matchConditions."""
    client = dict(client_config)
    if ca_bundle is not None:
        client["caBundle"] = base64.b64encode(ca_bundle).decode()
    return {
        "name": WEBHOOK_NAME,
        "admissionReviewVersions": ["v1"],
        "sideEffects": "NoneOnDryRun",
        "failurePolicy": "Fail",
        "timeoutSeconds": 10,
        "clientConfig": client,
        "rules": [
            {
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "operations": ["CREATE"],
                "resources": ["pods/eviction"],
                "scope": "Namespaced",
            }
        ],
    }


def match_conditions(covered: set[Key]) -> list[dict[str, str]]:
    return [{"name": "lws-pods", "expression": d.eviction_match_expression(covered)}]


def covered_of(config: dict[str, Any] | None) -> set[Key]:
    """The LWS (namespace, name) a configuration covers, from its annotation."""
    raw = annotations_of(config).get(COVERED_ANNOTATION)
    try:
        keys = json.loads(raw) if raw else []
        return {OwnerKey(*str(k).split("/", 1)) for k in keys if "/" in k}
    except (ValueError, TypeError):
        return set()


def configuration(webhook: dict[str, Any], covered: set[Key]) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {
            "name": CONFIGURATION_NAME,
            "labels": {"app.kubernetes.io/name": "lws-operator"},
            "annotations": {
                COVERED_ANNOTATION: json.dumps(sorted(f"{ns}/{n}" for ns, n in covered))
            },
        },
        "webhooks": [{**webhook, "matchConditions": match_conditions(covered)}],
    }


class EvictionCoverage:
    """Keeps ``lws-eviction-webhook-configuration``: its client config and CA (when the
    operator manages its certificates, ``manage_client``) and which LWS it covers. Each write
    reads the object first and keeps what it does not change, so the certificate keeper
    (every replica) and the reconcile (the leader) never undo each other."""

    def __init__(self, kube: Kube, *, manage_client: bool) -> None:
        self.kube = kube
        self.manage_client = manage_client
        self._webhook: dict[str, Any] | None = None
        self._covered: set[Key] | None = None
        self._add: set[Key] = set()
        self._remove: set[Key] = set()
        self._lock = asyncio.Lock()
        self._warned = False
        self._verified = 0.0
        self._tasks: set[asyncio.Task[None]] = set()

    async def publish(self, client_config: dict[str, Any], ca_bundle: bytes) -> None:
        """Point the webhook at this server with this CA (operator-managed certificates)."""
        self._webhook = eviction_webhook(client_config, ca_bundle)
        await self._write(force=True)

    async def cover(self, key: Key) -> None:
        """Return once evictions of this LWS's pods reach the webhook."""
        due = time.monotonic() - self._verified > VERIFY_SECONDS
        if self._covered is not None and key in self._covered and not due:
            return
        self._add.add(key)
        self._remove.discard(key)
        await self._write(force=due)

    def forget(self, key: Key) -> None:
        """The LWS is gone: stop covering it (in the background). Every event of its pods
        going lands here too: once it is not covered, or its removal is queued, no read."""
        if key in self._remove or (
            self._covered is not None and key not in self._covered and key not in self._add
        ):
            return
        self._remove.add(key)
        self._add.discard(key)
        task = asyncio.get_running_loop().create_task(self._write())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _write(self, *, force: bool = False) -> None:
        path = f"{_CONFIG_PATH}/{CONFIGURATION_NAME}"
        async with self._lock:
            if not force and not self._add and not self._remove:
                return  # a write queued behind ours did it
            add, remove = set(self._add), set(self._remove)
            for _ in range(ATTEMPTS):
                current = await self.kube.get_or_none(path)
                covered = (covered_of(current) | (self._covered or set()) | add) - remove
                if current is None and not self.manage_client:
                    if not self._warned:
                        log.warning(
                            "validatingwebhookconfiguration %s is missing: evictions of LWS "
                            "pods are not answered per group (install it from deploy/)",
                            CONFIGURATION_NAME,
                        )
                        self._warned = True
                    break
                if current is None or self.manage_client:
                    if self._webhook is None:
                        break  # not published yet: the keeper's start writes it
                    body = configuration(self._webhook, covered)
                else:
                    body = json.loads(json.dumps(current))
                    body["metadata"].setdefault("annotations", {})[COVERED_ANNOTATION] = (
                        configuration({}, covered)["metadata"]["annotations"][COVERED_ANNOTATION]
                    )
                    for hook in body.get("webhooks") or []:
                        if hook.get("name") == WEBHOOK_NAME:
                            hook["matchConditions"] = match_conditions(covered)
                if current is not None and _same(current, body):
                    break
                try:
                    if current is None:
                        await self.kube.create(_CONFIG_PATH, body)
                    else:
                        body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
                        await self.kube.replace(path, body)
                except ApiError as e:
                    if e.status == 409:
                        continue
                    raise
                break
            else:
                raise RuntimeError(f"could not write {CONFIGURATION_NAME}: conflicting writers")
            self._covered = (self._covered or set()) | add
            self._covered -= remove
            self._add -= add
            self._remove -= remove
            self._verified = time.monotonic()


def _same(current: dict[str, Any], body: dict[str, Any]) -> bool:
    """Whether writing ``body`` would change what the API server acts on."""
    ours = annotations_of(body).get(COVERED_ANNOTATION)
    theirs = annotations_of(current).get(COVERED_ANNOTATION)
    hooks = {h.get("name"): h for h in current.get("webhooks") or []}
    return ours == theirs and all(
        all(hooks.get(h["name"], {}).get(k) == v for k, v in h.items())
        for h in body.get("webhooks") or []
    )


class EvictionReviewer:
    """Answers the eviction AdmissionReviews, from the cache and a live read of the pod."""

    def __init__(self, kube: Kube, cache: Cache) -> None:
        self.kube = kube
        self.cache = cache

    async def review(self, review: dict[str, Any]) -> dict[str, Any]:
        request = review.get("request") or {}
        response: dict[str, Any] = {"uid": request.get("uid", ""), "allowed": True}
        resource = (request.get("resource") or {}).get("resource")
        if (
            request.get("operation") == "CREATE"
            and resource == "pods"
            and request.get("subResource") == "eviction"
        ):
            namespace, name = str(request.get("namespace") or ""), str(request.get("name") or "")
            answer = await self.answer(namespace, name, dry_run=bool(request.get("dryRun")))
            if not answer.allowed:
                response["allowed"] = False
                response["status"] = answer.status()
                log.info(
                    "eviction of pod %s/%s refused (%d): %s",
                    namespace,
                    name,
                    answer.code,
                    answer.message,
                )
        return {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": response,
        }

    async def answer(self, namespace: str, name: str, *, dry_run: bool) -> d.EvictionAnswer:
        pods = resource_path("v1", "pods", namespace=namespace, name=name)
        pod = await self.kube.get_or_none(pods)
        lws_name = labels_of(pod).get(c.SET_NAME_LABEL)
        if pod is None or not lws_name:
            return d.EvictionAnswer(True, message="not a pod of a LeaderWorkerSet")
        if not self.cache.synced():
            return d.EvictionAnswer(False, 429, "the LWS operator is starting; retry")
        key = OwnerKey(namespace, lws_name)
        sts_path = resource_path("apps/v1", "statefulsets", namespace=namespace, name=lws_name)
        leader_sts: dict[str, Any] | None = None
        for _ in range(ATTEMPTS):
            obs = self.cache.observe(key)
            if obs.lws is None:
                return d.EvictionAnswer(True, message=f"LeaderWorkerSet {lws_name} is gone")
            try:
                lws = LeaderWorkerSet.model_validate(obs.lws)
            except ValidationError:
                return d.EvictionAnswer(True, message=f"LeaderWorkerSet {lws_name} is invalid")
            if leader_sts is None:
                leader_sts = obs.statefulsets.get(lws_name)
            if leader_sts is None:
                return d.EvictionAnswer(True, message="no groups yet")
            spec = lws.spec
            cfg = spec.rollout_strategy.rolling_update_configuration
            node = self.cache.nodes().get(str((pod.get("spec") or {}).get("nodeName") or ""))
            answer = d.answer_eviction(
                d.EvictionInput(
                    lws_name=lws_name,
                    replicas=spec.replicas,
                    size=spec.leader_worker_template.size,
                    budget=d.budget(
                        lws.annotations, spec.replicas, cfg.max_unavailable, cfg.max_surge
                    ),
                    state=d.read_state(leader_sts),
                    groups=obs.groups,
                    pod=pod,
                    node_cordoned=bool(((node or {}).get("spec") or {}).get("unschedulable")),
                    now=datetime.datetime.now(datetime.UTC),
                )
            )
            if answer.record is None or dry_run:
                return answer
            rv = str(leader_sts["metadata"].get("resourceVersion") or "")
            try:
                await self.kube.patch(sts_path, d.state_patch(answer.record, rv), kind="merge")
            except ApiError as e:
                if e.status != 409:
                    return d.EvictionAnswer(False, 429, f"cannot record the move: {e.message}")
                leader_sts = await self.kube.get_or_none(sts_path)
                continue
            return answer
        return d.EvictionAnswer(False, 429, "the disruption state is busy; retry")
