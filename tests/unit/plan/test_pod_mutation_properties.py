"""Properties of the pod mutation over generated pods."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch  # a kopf dependency
from hypothesis import given, settings
from hypothesis import strategies as st

from lws_operator.plan.jsonpatch import admission_patch
from lws_operator.plan.lws.pod_mutation import LWS_ENV_NAMES, PodMutationError, mutate_pod
from tests.unit.plan.strategies import corrupted_pods, lws_pods

providers = st.sampled_from([None, "volcano", "kubernetes"])


def _containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return [*(pod["spec"].get("containers") or []), *(pod["spec"].get("initContainers") or [])]


@given(lws_pods(), providers)
def test_mutation_is_idempotent(pod: dict[str, Any], provider: str | None) -> None:
    once = mutate_pod(pod, gang_provider=provider)
    assert mutate_pod(once, gang_provider=provider) == once


@given(lws_pods(), providers)
def test_lws_env_first_once_each_and_user_order_kept(
    pod: dict[str, Any], provider: str | None
) -> None:
    mutated = mutate_pod(pod, gang_provider=provider)
    for before, after in zip(_containers(pod), _containers(mutated), strict=True):
        names = [e["name"] for e in after["env"]]
        assert names[: len(LWS_ENV_NAMES)] == list(LWS_ENV_NAMES)
        assert all(names.count(n) == 1 for n in LWS_ENV_NAMES)
        kept = [e for e in before.get("env") or [] if e["name"] not in LWS_ENV_NAMES]
        # The user's other entries follow, untouched and in order; TPU variables come last.
        assert after["env"][len(LWS_ENV_NAMES) : len(LWS_ENV_NAMES) + len(kept)] == kept
        tail = names[len(LWS_ENV_NAMES) + len(kept) :]
        assert all(n.startswith("TPU_") for n in tail)


@given(lws_pods(), providers)
def test_input_untouched_and_patch_reproduces_the_mutation(
    pod: dict[str, Any], provider: str | None
) -> None:
    before = copy.deepcopy(pod)
    mutated = mutate_pod(pod, gang_provider=provider)
    assert pod == before
    patch = admission_patch(pod, mutated)
    assert jsonpatch.apply_patch(pod, patch) == mutated


@settings(max_examples=500)
@given(corrupted_pods(), providers)
def test_malformed_pods_raise_only_pod_mutation_error(pod: Any, provider: str | None) -> None:
    try:
        mutated = mutate_pod(pod, gang_provider=provider)
    except PodMutationError as error:
        assert str(error).startswith("pod ")
    else:
        assert isinstance(mutated, dict)
        # Whatever was accepted is a fixed point too.
        assert mutate_pod(mutated, gang_provider=provider) == mutated
