"""The mutating webhooks: an HTTPS server answering AdmissionReviews, and the
MutatingWebhookConfiguration that points the API server at it.

Two webhooks, as upstream's configuration has (same names and paths):

* ``mpod.kb.io``: LWS pods at CREATE (:mod:`lws_operator.plan.lws.pod_mutation`). It selects pods
  labelled ``leaderworkerset.sigs.k8s.io/name`` and fails closed, so no other pod in the
  cluster depends on the operator being up.
* ``mleaderworkerset.kb.io``: LeaderWorkerSets carrying Go's zero values, stored as upstream
  stores them (:mod:`lws_operator.api.zero_values`). Its ``matchConditions`` send it only those
  writes; every other LeaderWorkerSet write never reaches the operator. The same on every
  Kubernetes version (docs/kubernetes-versions.md says why it is not an admission policy).

The decisions are pure; this module only speaks HTTP.
"""

from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from lws_operator.api import constants as c
from lws_operator.api import zero_values
from lws_operator.controller.servers.certs import ServerTLS, ServingCert
from lws_operator.kube.client import ApiError, Kube
from lws_operator.plan.jsonpatch import admission_patch
from lws_operator.plan.lws.pod_mutation import PodMutationError, mutate_pod
from lws_operator.plan.meta import labels_of

log = logging.getLogger(__name__)

POD_WEBHOOK_PATH = "/mutate--v1-pod"
LWS_WEBHOOK_PATH = "/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset"
CONFIGURATION_NAME = "lws-mutating-webhook-configuration"
POD_WEBHOOK_NAME = "mpod.kb.io"
LWS_WEBHOOK_NAME = "mleaderworkerset.kb.io"
_CONFIG_PATH = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"


def review_response(review: dict[str, Any], gang_provider: str | None) -> dict[str, Any]:
    """The AdmissionReview answer for one pod CREATE."""
    request = review.get("request") or {}
    response: dict[str, Any] = {"uid": request.get("uid", ""), "allowed": True}
    pod = request.get("object")
    if request.get("operation") == "CREATE" and isinstance(pod, dict):
        # The API server omits the namespace on pods created with generateName or by
        # controllers; the request carries it.
        pod.setdefault("metadata", {}).setdefault("namespace", request.get("namespace", ""))
        try:
            mutated = mutate_pod(pod, gang_provider=gang_provider)
        except PodMutationError as e:
            response["allowed"] = False
            response["status"] = {"code": 400, "reason": "BadRequest", "message": str(e)}
        else:
            if patch := admission_patch(pod, mutated):
                response["patchType"] = "JSONPatch"
                response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}


def lws_review_response(review: dict[str, Any]) -> dict[str, Any]:
    """The AdmissionReview answer for one LeaderWorkerSet CREATE or UPDATE: Go's zero values
    replaced by what upstream stores. Never denies: the schema and the rules judge the rest."""
    request = review.get("request") or {}
    response: dict[str, Any] = {"uid": request.get("uid", ""), "allowed": True}
    lws = request.get("object")
    if isinstance(lws, dict) and (patch := admission_patch(lws, zero_values.with_defaults(lws))):
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}


# One endpoint's answer to a parsed AdmissionReview.
Answer = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


class WebhookServer:
    """Serves the admission webhooks over TLS; :meth:`load` swaps the certificate without a
    restart."""

    def __init__(self, host: str, port: int, gang_provider: str | None = None) -> None:
        self.host = host
        self.port = port
        self.gang_provider = gang_provider
        # Called with (path, HTTP status, seconds) after each request (metrics).
        self.on_request: Callable[[str, int, float], None] | None = None
        self.tls = ServerTLS("webhook")
        self._runner: web.AppRunner | None = None
        # The eviction webhook (controller/lws/eviction.py), served at this path when set.
        self.evictions: tuple[str, Answer] | None = None

    def load(self, cert: ServingCert) -> None:
        """Serve ``cert`` to every new connection from now on."""
        self.tls.load(cert)

    def load_pem(self, cert_pem: bytes, key_pem: bytes) -> None:
        """Serve this certificate (chain) and key to every new connection from now on."""
        self.tls.load_pem(cert_pem, key_pem)

    def _endpoint(
        self, path: str, answer: Answer
    ) -> Callable[[web.Request], Awaitable[web.Response]]:
        """The handler of one path: parse the review, answer it, report the request."""

        async def handle(request: web.Request) -> web.Response:
            start = time.perf_counter()
            try:
                review = await request.json()
            except ValueError:
                response = web.Response(
                    status=400, text="body is not an AdmissionReview (invalid JSON)"
                )
            else:
                response = web.json_response(await answer(review))
            if self.on_request is not None:
                self.on_request(path, response.status, time.perf_counter() - start)
            return response

        return handle

    async def _pod_answer(self, review: dict[str, Any]) -> dict[str, Any]:
        answer = review_response(review, self.gang_provider)
        if not answer["response"]["allowed"]:
            request = review.get("request") or {}
            labels = labels_of(request.get("object"))
            log.warning(
                "denied pod: %s",
                answer["response"]["status"]["message"],
                extra={
                    "leaderworkerset": f"{request.get('namespace')}/{labels.get(c.SET_NAME_LABEL)}",
                    "group": labels.get(c.GROUP_INDEX_LABEL),
                },
            )
        return answer

    @staticmethod
    async def _lws_answer(review: dict[str, Any]) -> dict[str, Any]:
        return lws_review_response(review)

    @property
    def serving(self) -> bool:
        return self._runner is not None

    async def start(self) -> int:
        """Start serving; returns the bound port (useful with port 0)."""
        app = web.Application()
        endpoints: list[tuple[str, Answer]] = [
            (POD_WEBHOOK_PATH, self._pod_answer),
            (LWS_WEBHOOK_PATH, self._lws_answer),
        ]
        if self.evictions is not None:
            endpoints.append(self.evictions)
        for path, answer in endpoints:
            app.router.add_post(path, self._endpoint(path, answer))
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=self.tls.context)
        await site.start()
        if self.port == 0:
            self.port = int(self._runner.addresses[0][1])
        return self.port

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self.tls.close()


def client_config_url(host: str, port: int, path: str = POD_WEBHOOK_PATH) -> dict[str, Any]:
    return {"url": f"https://{host}:{port}{path}"}


def client_config_service(
    service: str, namespace: str, port: int = 443, path: str = POD_WEBHOOK_PATH
) -> dict[str, Any]:
    return {"service": {"name": service, "namespace": namespace, "path": path, "port": port}}


def webhook_configuration(
    client_config: Callable[[str], dict[str, Any]], ca_bundle: bytes
) -> dict[str, Any]:
    """Both webhooks, with ``client_config(path)`` saying where the API server reaches each."""

    def client(path: str) -> dict[str, Any]:
        return {**client_config(path), "caBundle": base64.b64encode(ca_bundle).decode()}

    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {
            "name": CONFIGURATION_NAME,
            "labels": {"app.kubernetes.io/name": "lws-operator"},
        },
        "webhooks": [
            {
                "name": POD_WEBHOOK_NAME,
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "failurePolicy": "Fail",
                "timeoutSeconds": 10,
                "clientConfig": client(POD_WEBHOOK_PATH),
                "objectSelector": {
                    "matchExpressions": [{"key": c.SET_NAME_LABEL, "operator": "Exists"}]
                },
                "rules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["pods"],
                        "scope": "Namespaced",
                    }
                ],
            },
            {
                "name": LWS_WEBHOOK_NAME,
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                # A zero value must never be stored: the schema would refuse it anyway.
                "failurePolicy": "Fail",
                "timeoutSeconds": 10,
                # Again after a later webhook (Kueue's) wrote a zero value back.
                "reinvocationPolicy": "IfNeeded",
                "clientConfig": client(LWS_WEBHOOK_PATH),
                "matchConditions": [
                    {"name": "go-zero-values", "expression": zero_values.match_condition()}
                ],
                "rules": [
                    {
                        "apiGroups": [c.GROUP],
                        "apiVersions": [c.VERSION],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": [c.PLURAL],
                        "scope": "Namespaced",
                    }
                ],
            },
        ],
    }


async def register(kube: Kube, body: dict[str, Any]) -> None:
    """Create or replace the configuration as a whole: the operator owns it, and replacing
    (not merging) drops webhooks a previous LWS controller left in it."""
    path = f"{_CONFIG_PATH}/{body['metadata']['name']}"
    for _ in range(5):
        current = await kube.get_or_none(path)
        try:
            if current is None:
                await kube.create(_CONFIG_PATH, body)
            else:
                replacement = json.loads(json.dumps(body))
                replacement["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
                await kube.replace(path, replacement)
            return
        except ApiError as e:
            if e.status != 409:
                raise
    raise RuntimeError(f"could not register {body['metadata']['name']}: conflicting writers")
