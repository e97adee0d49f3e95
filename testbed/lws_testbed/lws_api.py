"""Installing the LeaderWorkerSet API (what ``kubectl apply --server-side -f crds/`` installs)
and waiting until it is in effect, so the first LWS written after it is admitted.

Served is not enough. The admission policies are loaded by the API server from informers, and
the mutating policy needs the new kind's schema from the API server's OpenAPI document; until
that is republished, every LWS write answers 503 ("Resource kind ... not found. There can be a
delay between when CustomResourceDefinitions are created and when they are available"). A
write at that moment fails: CI saw it in ``make bench-create``. Nothing can be watched for
either, so dry-run creates probe them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from lws_operator.api import constants as c
from lws_operator.api.admission_policy import install_documents
from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.paths import resource_path
from lws_testbed.manifests import Applier

FIELD_MANAGER = "lws-operator-install"


async def until(probe: Callable[[], Awaitable[bool]], *, timeout: float, what: str) -> None:
    """Retry ``probe`` with a short backoff until it holds. Only for state that nothing can
    be watched for (an admission policy taking effect, the OpenAPI document being
    republished); everything else waits on watches."""
    deadline = time.monotonic() + timeout
    delay = 0.05
    while not await probe():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        await asyncio.sleep(delay)
        delay = min(delay * 2, 1.0)


def _probe(name: str, spec: dict[str, Any] | None = None) -> dict[str, Any]:
    pod = {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]}
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.KIND,
        "metadata": {"name": name},
        "spec": {"leaderWorkerTemplate": {"size": 1, "workerTemplate": {"spec": pod}}}
        | (spec or {}),
    }


async def install_lws_api(
    kube: Kube, field_manager: str = FIELD_MANAGER, *, wait: bool = True
) -> None:
    """Apply the CRD (waited on until served) and both admission policies; with ``wait``,
    until both policies act."""
    await Applier(kube, field_manager).apply_all(install_documents())
    if wait:
        await wait_lws_api(kube)


async def wait_lws_api(kube: Kube, timeout: float = 60) -> None:
    """Until the validating policy rejects what only it rejects, and the mutating one stores
    Go's zero value as the default (its 503s retried)."""
    path = resource_path(c.API_VERSION, c.PLURAL, namespace="default")
    probe = _probe("lws-policy-probe")
    probe["metadata"]["annotations"] = {c.EXCLUSIVE_KEY_ANNOTATION: ""}
    last = ["nothing yet"]  # the last answer, for a timeout's message

    async def policy_rejects() -> bool:
        try:
            await kube.create(path, probe, dry_run=True)
        except ApiError as e:
            last[0] = f"{e.status} {e.message}"
            return "ValidatingAdmissionPolicy" in e.message
        last[0] = "admitted"
        return False

    zero = _probe("lws-mutating-policy-probe", {"rolloutStrategy": {"type": ""}})

    async def zero_defaulted() -> bool:
        try:
            stored = await kube.create(path, zero, dry_run=True)
        except ApiError as e:
            last[0] = f"{e.status} {e.message}"
            return False
        last[0] = f"stored rolloutStrategy {stored['spec']['rolloutStrategy']}"
        return bool(stored["spec"]["rolloutStrategy"]["type"] == "RollingUpdate")

    for holds, what in (
        (policy_rejects, "the admission policy to take effect"),
        (zero_defaulted, "the mutating admission policy to take effect"),
    ):
        try:
            await until(holds, timeout=timeout, what=what)
        except TimeoutError as e:
            raise TimeoutError(f"{e}; the last dry-run create: {last[0]}") from None
