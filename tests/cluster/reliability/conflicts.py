"""Writes answered with conflicts: a validating admission webhook, served by the test process on
127.0.0.1 and registered with the real kube-apiserver, that answers a seeded fraction of the
operator's writes in one namespace with 409 Conflict. The operator sees exactly what it sees
when another writer wins a race: the API server's own 409 Status."""

from __future__ import annotations

import asyncio
import base64
import random
import ssl
import tempfile
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from lws_operator import pki
from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.paths import resource_path

MESSAGE = (
    "injected conflict: the object has been modified; please apply your changes to the latest "
    "version and try again"
)
PROBE = "conflict-probe"
_CONFIGS = resource_path("admissionregistration.k8s.io/v1", "validatingwebhookconfigurations")


@dataclass
class ConflictInjector:
    """Decides, request by request, which writes lose: the first of each kind (operation,
    resource[/subresource]), then a seeded ``rate`` of them. ``denied`` and ``allowed`` count
    them by kind."""

    rate: float
    seed: int
    denied: Counter[tuple[str, str]] = field(default_factory=Counter)
    allowed: Counter[tuple[str, str]] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)

    def review(self, request: dict[str, Any]) -> dict[str, Any]:
        resource = request["resource"]["resource"]
        if request.get("subResource"):
            resource += "/" + request["subResource"]
        what = (request["operation"], resource)
        response: dict[str, Any] = {"uid": request["uid"], "allowed": True}
        probe = request.get("name") == PROBE
        # The first write of each kind always loses, then a seeded fraction of them.
        if probe or what not in self.denied or self._random.random() < self.rate:
            if not probe:
                self.denied[what] += 1
            response["allowed"] = False
            response["status"] = {"code": 409, "reason": "Conflict", "message": MESSAGE}
        else:
            self.allowed[what] += 1
        return response

    def summary(self) -> str:
        def fmt(c: Counter[tuple[str, str]]) -> str:
            return ", ".join(f"{op} {res}: {n}" for (op, res), n in sorted(c.items())) or "none"

        return (
            f"{sum(self.denied.values())} writes answered 409 ({fmt(self.denied)}); "
            f"{sum(self.allowed.values())} let through ({fmt(self.allowed)})"
        )


def _config(name: str, url: str, ca_pem: bytes, namespace: str, username: str) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [
            {
                "name": "conflicts.lws-test.local",
                "clientConfig": {"url": url, "caBundle": base64.b64encode(ca_pem).decode()},
                "rules": [
                    {
                        "apiGroups": ["", "apps", "leaderworkerset.x-k8s.io"],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE", "DELETE"],
                        "resources": [
                            "pods",
                            "services",
                            "statefulsets",
                            "controllerrevisions",
                            "leaderworkersets",
                            "leaderworkersets/status",
                        ],
                        "scope": "Namespaced",
                    }
                ],
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                "matchConditions": [
                    {
                        "name": "the-operator-or-the-probe",
                        "expression": (
                            f"request.userInfo.username == '{username}' "
                            f"|| request.name == '{PROBE}'"
                        ),
                    }
                ],
                # Nothing else is held up should the test process go away.
                "failurePolicy": "Ignore",
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "timeoutSeconds": 5,
            }
        ],
    }


@asynccontextmanager
async def conflicting_writes(
    kube: Kube, namespace: str, *, username: str, rate: float, seed: int, timeout: float = 30
) -> AsyncIterator[ConflictInjector]:
    """Serve and register the webhook; yield once kube-apiserver calls it (a dry-run probe is
    answered 409); unregister and stop on exit."""
    injector = ConflictInjector(rate, seed)

    async def handle(request: web.Request) -> web.Response:
        review = await request.json()
        return web.json_response(
            {
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "response": injector.review(review["request"]),
            }
        )

    ca = pki.make_ca("lws-test-conflicts")
    serving = pki.issue_cert(ca, "127.0.0.1", ip_addresses=("127.0.0.1",))
    tls = _server_context(serving)
    app = web.Application()
    app.router.add_post("/validate", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    name = f"lws-test-conflicts-{namespace}"
    url = f"https://127.0.0.1:{port}/validate"
    await kube.create(_CONFIGS, _config(name, url, ca.cert_pem, namespace, username))
    try:
        await _until_called(kube, namespace, timeout)
        yield injector
    finally:
        await kube.delete(f"{_CONFIGS}/{name}")
        await runner.cleanup()


def _server_context(serving: pki.KeyPair) -> ssl.SSLContext:
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    with tempfile.TemporaryDirectory() as tmp:  # ssl loads certificates from files only
        cert, key = Path(tmp, "tls.crt"), Path(tmp, "tls.key")
        cert.write_bytes(serving.cert_pem)
        key.write_bytes(serving.key_pem)
        tls.load_cert_chain(cert, key)
    return tls


async def _until_called(kube: Kube, namespace: str, timeout: float) -> None:
    """kube-apiserver picks up a new webhook configuration asynchronously; no watch tells
    when, so a dry-run probe is retried (bounded) until the webhook answers it."""
    probe = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": PROBE},
        "spec": {"clusterIP": "None", "ports": [{"port": 80}]},
    }
    services = resource_path("v1", "services", namespace=namespace)
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        try:
            await kube.create(services, probe, dry_run=True)
        except ApiError as e:
            if e.status == 409 and MESSAGE in e.message:
                return
            raise
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"kube-apiserver did not call the conflict webhook in {timeout}s")
        await asyncio.sleep(0.2)
