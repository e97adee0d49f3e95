"""How long LeaderWorkerSet writes are refused after an API server start and after an install.

Go's zero values are stored as upstream stores them by the operator's LeaderWorkerSet webhook
(``lws_operator/api/zero_values.py``). The alternative, a MutatingAdmissionPolicy
(``admissionregistration.k8s.io/v1``, served from Kubernetes 1.36), is applied by the API
server only once its OpenAPI document holds the kind's schema: until then every LWS write
answers 503. This measures both on the selected Kubernetes version (``LWS_KUBE_VERSION``):

* ``restart``: kube-apiserver restarted; from its ``/readyz`` answering until the first
  admitted dry-run create of a plain LWS, and of one carrying a Go zero value;
* ``install``: the CRD and its admission policy applied on a cluster that never had them
  (the operator already running); from the CRD served (established, its objects listed)
  until the same two creates.

With ``--mechanism policy`` (1.36 and later) the MutatingAdmissionPolicy is installed beside
the webhook, as this project did before. Each probe is a dry-run create every 20 ms: the
refusal has no watchable end, so this is the measurement, not a wait. Medians of ``--runs``.

    python -m bench.admission_window [--runs 3] [--mechanism webhook|policy]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import time
from pathlib import Path
from typing import Any

from bench.common import lws_manifest, write_report
from lws_operator.api import constants as c
from lws_operator.api.admission_policy import install_documents
from lws_operator.api.zero_values import ZERO_VALUE_DEFAULTS
from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.paths import resource_path
from lws_testbed.binaries import kube_minor, pins
from lws_testbed.local import ClusterConfig, LocalCluster
from lws_testbed.lws_api import wait_lws_api, wait_zero_values
from lws_testbed.manifests import Applier
from lws_testbed.operator_process import start_operator

PROBE_INTERVAL = 0.02
TIMEOUT = 60.0
ADMISSION = "admissionregistration.k8s.io/v1"


def mutating_policy() -> list[dict[str, Any]]:
    """The MutatingAdmissionPolicy and binding this project installed before (for comparison:
    the same JSON patches the webhook now makes)."""
    patches = " + ".join(
        "(object" + "".join(f".?{p}" for p in path) + '.orValue("-") == "" ? '
        f'[JSONPatch{{op: "replace", path: "/{"/".join(path)}", value: "{value}"}}] : [])'
        for path, value in ZERO_VALUE_DEFAULTS
    )
    name = f"{c.PLURAL}.{c.GROUP}"
    rules = [
        {
            "apiGroups": [c.GROUP],
            "apiVersions": [c.VERSION],
            "operations": ["CREATE", "UPDATE"],
            "resources": [c.PLURAL],
        }
    ]
    return [
        {
            "apiVersion": ADMISSION,
            "kind": "MutatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "reinvocationPolicy": "IfNeeded",
                "matchConstraints": {"resourceRules": rules},
                "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": patches}}],
            },
        },
        {
            "apiVersion": ADMISSION,
            "kind": "MutatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {"policyName": name},
        },
    ]


def _bodies() -> dict[str, dict[str, Any]]:
    plain = lws_manifest("window-probe", 1, 1)
    zero = copy.deepcopy(plain)
    zero["metadata"]["name"] = "window-probe-zero"
    zero["spec"]["rolloutStrategy"] = {"type": ""}
    return {"plain": plain, "zero": zero}


async def _first_admitted(kube: Kube, body: dict[str, Any], since: float) -> float:
    """Seconds from ``since`` until a dry-run create of ``body`` is admitted."""
    path = resource_path(c.API_VERSION, c.PLURAL, namespace="default")
    deadline = time.monotonic() + TIMEOUT
    last = ""
    while time.monotonic() < deadline:
        try:
            stored = await kube.create(path, copy.deepcopy(body), dry_run=True)
        except (ApiError, OSError) as e:
            if not last:
                print(f"  {body['metadata']['name']} refused: {e}", flush=True)
            last = str(e)
        else:
            if stored["spec"]["rolloutStrategy"]["type"] == "RollingUpdate":
                return round(time.monotonic() - since, 3)
            last = f"stored {stored['spec']['rolloutStrategy']}"
        await asyncio.sleep(PROBE_INTERVAL)
    raise TimeoutError(f"not admitted within {TIMEOUT:.0f}s; last answer: {last}")


async def _windows(kube: Kube, since: float) -> dict[str, float]:
    plain, zero = await asyncio.gather(
        *(_first_admitted(kube, b, since) for b in _bodies().values())
    )
    return {"plain": plain, "zero": zero}


async def measure(cluster: LocalCluster, state: Path, mechanism: str) -> dict[str, float]:
    async with await Kube.connect(cluster.kubeconfig()) as kube:
        # The operator first (its informers take a resource not served yet as empty), then
        # the install, as a fresh `kubectl apply -k` does.
        op = await start_operator(kube, cluster.kubeconfig("lws-operator"), state / "op.log")
        try:
            docs = install_documents()
            if mechanism == "policy":
                docs += mutating_policy()
            # The Applier returns once the CRD is established and its objects can be listed.
            await Applier(kube, "admission-window").apply_all(docs)
            install = await _windows(kube, time.monotonic())
            await wait_lws_api(kube)
            await wait_zero_values(kube)
            # restart_component returns once /readyz answers.
            await asyncio.to_thread(cluster.restart_component, "kube-apiserver")
            restart = await _windows(kube, time.monotonic())
            op.check_alive()
        finally:
            await op.stop()
    return {
        "install_plain_s": install["plain"],
        "install_zero_s": install["zero"],
        "restart_plain_s": restart["plain"],
        "restart_zero_s": restart["zero"],
    }


def one_run(state: Path, mechanism: str) -> dict[str, float]:
    cluster = LocalCluster(ClusterConfig(state_dir=state))
    cluster.start()
    try:
        return asyncio.run(measure(cluster, state, mechanism))
    finally:
        cluster.stop()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.admission_window")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--mechanism", choices=("webhook", "policy"), default="webhook")
    parser.add_argument("--state-dir", type=Path, default=Path(".local/bench-admission"))
    args = parser.parse_args()
    if args.mechanism == "policy" and kube_minor() < 36:
        parser.error("the MutatingAdmissionPolicy is served (GA) from Kubernetes 1.36")
    runs = []
    for i in range(args.runs):
        runs.append(one_run(args.state_dir / f"run-{i}", args.mechanism))
        print(f"run {i + 1}: {runs[-1]}", flush=True)
    version = pins()["KUBE_VERSION"]
    text = write_report(
        f"admission-window-{args.mechanism}-v{version}",
        f"LWS writes refused after an install and an API server restart ({args.mechanism})",
        list(runs[0]),
        runs,
    )
    print(text)


if __name__ == "__main__":
    main()
