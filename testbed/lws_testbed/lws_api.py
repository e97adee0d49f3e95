"""Installing the LeaderWorkerSet API (what ``kubectl apply --server-side -f crds/`` installs)
and waiting until it is in effect, so the first LWS written after it is admitted.

Served is not enough: the admission policy is loaded by the API server from an informer.
Nothing can be watched for that, so dry-run creates probe it. Go's zero values are stored as
upstream stores them by the operator's webhook, so :func:`wait_zero_values` holds only once an
operator serves it.
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
    """Apply the CRD (waited on until served) and its admission policy; with ``wait``, until
    the policy acts."""
    await Applier(kube, field_manager).apply_all(install_documents())
    if wait:
        await wait_lws_api(kube)


async def _until_dry_run(
    kube: Kube,
    probe: dict[str, Any],
    holds: Callable[[dict[str, Any] | ApiError], bool],
    *,
    timeout: float,
    what: str,
) -> None:
    """Until a dry-run create of ``probe`` answers what ``holds`` accepts (the stored object,
    or the error)."""
    path = resource_path(c.API_VERSION, c.PLURAL, namespace="default")
    last = ["nothing yet"]  # the last answer, for a timeout's message

    async def check() -> bool:
        answer: dict[str, Any] | ApiError
        try:
            answer = stored = await kube.create(path, probe, dry_run=True)
            last[0] = f"stored spec {stored['spec']}"
        except ApiError as e:
            answer = e
            last[0] = f"{e.status} {e.message}"
        return holds(answer)

    try:
        await until(check, timeout=timeout, what=what)
    except TimeoutError as e:
        raise TimeoutError(f"{e}; the last dry-run create: {last[0]}") from None


async def wait_lws_api(kube: Kube, timeout: float = 60) -> None:
    """Until the validating policy rejects what only it rejects."""
    probe = _probe("lws-policy-probe")
    probe["metadata"]["annotations"] = {c.EXCLUSIVE_KEY_ANNOTATION: ""}
    await _until_dry_run(
        kube,
        probe,
        lambda a: isinstance(a, ApiError) and "ValidatingAdmissionPolicy" in a.message,
        timeout=timeout,
        what="the admission policy to take effect",
    )


async def wait_zero_values(kube: Kube, timeout: float = 60) -> None:
    """Until Go's zero value is stored as the default: the operator's LeaderWorkerSet webhook
    is registered and answers."""
    await _until_dry_run(
        kube,
        _probe("lws-zero-value-probe", {"rolloutStrategy": {"type": ""}}),
        lambda a: (
            not isinstance(a, ApiError) and a["spec"]["rolloutStrategy"]["type"] == "RollingUpdate"
        ),
        timeout=timeout,
        what="the operator's LeaderWorkerSet webhook to store Go's zero values",
    )
