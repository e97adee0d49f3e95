"""Fixtures for the LeaderWorkerSet API tests: the CRD and its admission policy, installed
once per session from the generator (not from the committed files, which the unit drift
test keeps equal), and a namespace shared by a module's tests."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from lws_operator.api import constants as c
from lws_operator.api.admission_policy import (
    validating_admission_policy,
    validating_admission_policy_binding,
)
from lws_operator.api.crd import custom_resource_definition
from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.paths import resource_path
from lws_operator.kube.wait import wait_for_objects
from tests.unit.api.lws_testdata import base_object

FIELD_MANAGER = "lws-api-tests"
ADMISSION = "admissionregistration.k8s.io/v1"


def lws_path(namespace: str, name: str | None = None, subresource: str | None = None) -> str:
    return resource_path(
        c.API_VERSION, c.PLURAL, namespace=namespace, name=name, subresource=subresource
    )


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


def _established(objs: dict[str, dict[str, Any]]) -> bool:
    crd = objs.get(c.CRD_NAME, {})
    conditions = crd.get("status", {}).get("conditions") or []
    return any(x["type"] == "Established" and x["status"] == "True" for x in conditions)


@pytest.fixture(scope="session")
async def lws_api(kube: Kube) -> AsyncIterator[None]:
    """The LeaderWorkerSet CRD and admission policy, installed and in effect."""
    crds = "apiextensions.k8s.io/v1"
    await kube.apply(
        resource_path(crds, "customresourcedefinitions", name=c.CRD_NAME),
        custom_resource_definition(),
        field_manager=FIELD_MANAGER,
    )
    await wait_for_objects(
        kube,
        resource_path(crds, "customresourcedefinitions"),
        _established,
        field_selector=f"metadata.name={c.CRD_NAME}",
        timeout=60,
        what="the LeaderWorkerSet CRD to be Established",
    )
    policy = validating_admission_policy()
    binding = validating_admission_policy_binding()
    await kube.apply(
        resource_path(ADMISSION, "validatingadmissionpolicies", name=policy["metadata"]["name"]),
        policy,
        field_manager=FIELD_MANAGER,
    )
    await kube.apply(
        resource_path(
            ADMISSION, "validatingadmissionpolicybindings", name=binding["metadata"]["name"]
        ),
        binding,
        field_manager=FIELD_MANAGER,
    )
    # The policy is in effect once it rejects an object only it rejects.
    probe = base_object("lws-policy-probe")
    probe["metadata"]["annotations"] = {c.EXCLUSIVE_KEY_ANNOTATION: ""}

    async def policy_rejects() -> bool:
        try:
            await kube.create(lws_path("default"), probe, dry_run=True)
        except ApiError as e:
            return "ValidatingAdmissionPolicy" in e.message
        return False

    await until(policy_rejects, timeout=60, what="the admission policy to take effect")
    yield


@pytest.fixture(scope="module")
async def api_namespace(kube: Kube, lws_api: None) -> AsyncIterator[str]:
    """A namespace for LeaderWorkerSet objects of one test module (they need no pods, so
    nothing waits for the namespace's ServiceAccount)."""
    name = f"lws-api-{secrets.token_hex(4)}"
    await kube.create(
        resource_path("v1", "namespaces"),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
    )
    try:
        yield name
    finally:
        await kube.delete(resource_path("v1", "namespaces", name=name), propagation="Background")
