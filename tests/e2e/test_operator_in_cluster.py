"""The operator as users run it: its own image, deployed from deploy/ (the e2e overlay of the
kind overlay) by ``make deploy``, 2 replicas with Lease leader election and the pod webhook
behind its Service, under restricted Pod Security and an arbitrary UID.

The tests that change the Deployment (failover, scaled to 0, upgrade) leave it as they found
it: 2 ready replicas of the current image.
"""

from __future__ import annotations

import base64
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lws_operator import pki
from lws_operator.api import constants as c
from lws_operator.controller.servers.webhook import LWS_WEBHOOK_PATH
from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.paths import resource_path
from lws_testbed.realnode import images, pin_to_real_node
from lws_testbed.realnode import node as realnode
from lws_testbed.wait import Objects, wait_for_objects
from tests.cluster.controller.helpers import (
    create_available,
    is_available,
    lws_body,
    lws_path,
    wait_lws,
)
from tests.e2e.conftest import E2E, image_archive
from tests.e2e.helpers import (
    DEPLOYMENT,
    E2E_OVERLAY,
    OPERATOR_NS,
    REPO,
    group_pods,
    lease_holder,
    lws_events,
    make_deploy,
    operator_pods,
    probe_container,
    restarts,
    wait_deployment,
)

ARBITRARY_UID = 1000123456  # the e2e overlay's runAsUser
TIMEOUT = 180


def snapshot(pods: dict[str, dict[str, Any]]) -> dict[str, tuple[str, int]]:
    return {n: (p["metadata"]["uid"], restarts(p)) for n, p in pods.items()}


async def scale_operator(kube: Kube, replicas: int) -> None:
    await kube.patch(
        resource_path("apps/v1", "deployments", namespace=OPERATOR_NS, name=DEPLOYMENT),
        {"spec": {"replicas": replicas}},
    )
    if replicas:
        await wait_deployment(kube, replicas)
        return
    await wait_for_objects(
        kube,
        resource_path("v1", "pods", namespace=OPERATOR_NS),
        lambda objs: not objs,
        timeout=TIMEOUT,
        what="no operator pods",
        label_selector="control-plane=controller-manager",
    )


async def test_installed_as_users_do(kube: Kube, e2e: E2E) -> None:
    """2 ready replicas on the real node running the local image, one Lease holder, the pod
    webhook behind its Service with the caBundle the operator manages (it verifies the
    serving certificate the replicas use)."""
    deployment = (await wait_deployment(kube, 2))[f"{OPERATOR_NS}/{DEPLOYMENT}"]
    (manager,) = deployment["spec"]["template"]["spec"]["containers"]
    assert manager["image"] == e2e.image("lws-operator")
    pods = await operator_pods(kube)
    assert len(pods) == 2 and all(p["spec"]["nodeName"] == e2e.node for p in pods.values())
    holder = await lease_holder(kube)
    assert holder.rsplit("_", 1)[0] in pods, (holder, list(pods))
    hook = await kube.get(
        resource_path(
            "admissionregistration.k8s.io/v1",
            "mutatingwebhookconfigurations",
            name="lws-mutating-webhook-configuration",
        )
    )
    entry, lws_entry = hook["webhooks"]
    assert entry["clientConfig"]["service"] == {
        "name": "lws-webhook-service",
        "namespace": OPERATOR_NS,
        "path": "/mutate--v1-pod",
        "port": 443,
    }
    assert lws_entry["clientConfig"]["service"]["path"] == LWS_WEBHOOK_PATH
    assert lws_entry["clientConfig"]["caBundle"] == entry["clientConfig"]["caBundle"]
    secret = await kube.get(
        resource_path("v1", "secrets", namespace=OPERATOR_NS, name="lws-webhook-server-cert")
    )
    serving = base64.b64decode(secret["data"]["tls.crt"])
    ca_bundle = base64.b64decode(entry["clientConfig"]["caBundle"])
    assert pki.is_signed_by(serving, ca_bundle)
    assert "lws-webhook-service.lws-system.svc" in pki.dns_names(serving)


async def test_go_zero_values_stored_through_the_service(kube: Kube, e2e: E2E) -> None:
    """A Go client's zero values reach the deployed replicas' LeaderWorkerSet webhook through
    its Service and are stored as upstream stores them."""
    await wait_deployment(kube, 2)
    body = lws_body("zero-values", size=2)
    body["spec"]["rolloutStrategy"] = {"type": ""}
    body["spec"]["leaderWorkerTemplate"]["restartPolicy"] = ""
    stored = await kube.create(lws_path("default"), body, dry_run=True)
    assert stored["spec"]["rolloutStrategy"]["type"] == "RollingUpdate"
    assert stored["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"] == {
        "partition": 0,
        "maxUnavailable": 1,
        "maxSurge": 0,
    }
    assert stored["spec"]["leaderWorkerTemplate"]["restartPolicy"] == "RecreateGroupOnPodRestart"


async def test_restricted_pod_security_and_an_arbitrary_uid(kube: Kube, e2e: E2E) -> None:
    ns = await kube.get(resource_path("v1", "namespaces", name=OPERATOR_NS))
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    privileged = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "privileged", "namespace": OPERATOR_NS},
        "spec": pin_to_real_node(
            {
                "containers": [
                    {
                        **probe_container(e2e.image("workload")),
                        "securityContext": {"privileged": True},
                    }
                ]
            }
        ),
    }
    with pytest.raises(ApiError) as refused:
        await kube.create(resource_path("v1", "pods", namespace=OPERATOR_NS), privileged)
    assert refused.value.status == 403 and 'violates PodSecurity "restricted' in str(refused.value)
    for name, pod in (await operator_pods(kube)).items():
        (status,) = pod["status"]["containerStatuses"]
        assert status["restartCount"] == 0, (name, status)
        pid = realnode.task_pid(e2e.containerd_socket, realnode.container_id(status))
        proc = read_process(pid)
        assert proc["Uid"] == [str(ARBITRARY_UID)] * 4, (name, proc["Uid"])
        assert proc["Gid"] == ["0"] * 4, (name, proc["Gid"])
        assert proc["CapEff"] == proc["CapPrm"] == ["0000000000000000"], (name, proc)
        assert proc["NoNewPrivs"] == ["1"] and proc["Seccomp"] == ["2"], (name, proc)
        assert proc["root_mount"][-1].split(",")[0] == "ro", (name, proc["root_mount"])
        assert not [line for line in proc["passwd"] if f":{ARBITRARY_UID}:" in line]


def read_process(pid: int) -> dict[str, list[str]]:
    """A container process's /proc/<pid>/status fields, how its root is mounted, and the
    image's /etc/passwd, read from the host."""
    proc = Path(f"/proc/{pid}")
    out = {
        k: v.split()
        for k, _, v in (line.partition(":") for line in (proc / "status").read_text().splitlines())
    }
    root = next(
        line.split()
        for line in (proc / "mounts").read_text().splitlines()
        if line.split()[1] == "/"
    )
    out["root_mount"] = [root[0], root[2], root[3]]
    out["passwd"] = (proc / "root" / "etc" / "passwd").read_text().splitlines()
    return out


async def test_the_standby_takes_over_when_the_leader_pod_is_deleted(
    kube: Kube, namespace: str
) -> None:
    ns, name = namespace, "failover"
    await create_available(kube, ns, lws_body(name, replicas=2, size=2))
    before = snapshot(await group_pods(kube, ns, name))
    holder = await lease_holder(kube)
    leader_pod = holder.rsplit("_", 1)[0]
    await kube.delete(resource_path("v1", "pods", namespace=OPERATOR_NS, name=leader_pod))
    # The other replica takes the Lease (the deleted one's successor may only stand by).
    objs = await wait_for_objects(
        kube,
        resource_path("coordination.k8s.io/v1", "leases", namespace=OPERATOR_NS),
        lambda o: (h := _holder(o)) != "" and h != holder and not h.startswith(f"{leader_pod}_"),
        timeout=60,
        what="another replica holding the Lease lws-operator",
        field_selector="metadata.name=lws-operator",
    )
    new_holder = _holder(objs)
    # It reconciles: a scale-up gets its group.
    await kube.patch(
        resource_path(c.API_VERSION, c.PLURAL, namespace=ns, name=name), {"spec": {"replicas": 3}}
    )
    await wait_lws(kube, ns, name, lambda o: is_available(o, 3), "Available with 3 groups")
    after = snapshot(await group_pods(kube, ns, name))
    assert {n: after[n] for n in before} == before, "a group was restarted by the handover"
    assert not await lws_events(kube, ns, "RecreateGroup")
    assert await lease_holder(kube) == new_holder
    await wait_deployment(kube, 2)


def _holder(objs: Objects) -> str:
    lease = objs.get(f"{OPERATOR_NS}/lws-operator") or {}
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


async def test_scaled_to_zero_the_webhook_fails_closed(
    kube: Kube, namespace: str, workload_image: str
) -> None:
    ns, name = namespace, "closed"
    await create_available(kube, ns, lws_body(name, replicas=1, size=3))
    await scale_operator(kube, 0)
    try:
        # A pod of a LeaderWorkerSet is refused, unmutated pods never exist...
        orphan = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "lws-pod", "labels": {c.SET_NAME_LABEL: name}},
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
        }
        with pytest.raises(ApiError) as refused:
            await kube.create(resource_path("v1", "pods", namespace=ns), orphan)
        assert "mpod.kb.io" in str(refused.value), refused.value
        # ... also when the StatefulSet controller replaces one: it waits, failing.
        await kube.delete(resource_path("v1", "pods", namespace=ns, name=f"{name}-0-2"))
        await wait_for_objects(
            kube,
            resource_path("events.k8s.io/v1", "events", namespace=ns),
            lambda objs: any(
                e.get("reason") == "FailedCreate" and "mpod.kb.io" in (e.get("note") or "")
                for e in objs.values()
            ),
            timeout=TIMEOUT,
            what="the StatefulSet controller refused by the webhook (FailedCreate)",
        )
        # Pods of no LeaderWorkerSet are not affected: one runs on the real node.
        plain = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "plain"},
            # As a leader it is ready at once (a worker would wait for its leader).
            "spec": pin_to_real_node(
                {
                    "containers": [
                        {
                            **probe_container(workload_image),
                            "env": [{"name": "LWS_WORKER_INDEX", "value": "0"}],
                        }
                    ]
                }
            ),
        }
        await kube.create(resource_path("v1", "pods", namespace=ns), plain)
        await wait_for_objects(
            kube,
            resource_path("v1", "pods", namespace=ns),
            lambda objs: _ready(objs.get(f"{ns}/plain")),
            timeout=TIMEOUT,
            what="the plain pod Ready",
            field_selector="metadata.name=plain",
        )
        pods = await group_pods(kube, ns, name)
        assert f"{name}-0-2" not in pods, sorted(pods)
    finally:
        await scale_operator(kube, 2)
    await wait_lws(kube, ns, name, lambda o: is_available(o, 1), "Available again", TIMEOUT)
    assert len(await group_pods(kube, ns, name)) == 3


def _ready(pod: dict[str, Any] | None) -> bool:
    conds = ((pod or {}).get("status") or {}).get("conditions") or []
    return any(x.get("type") == "Ready" and x.get("status") == "True" for x in conds)


# ---- upgrade ---------------------------------------------------------------------------------
PACKAGE = ("pyproject.toml", "README.md", "lws_operator")
# What an earlier version is installed from: its own manifests, not this checkout's (an old
# image with new flags would not start).
MANIFESTS = ("crds", "deploy", E2E_OVERLAY)
FIX_MARKER = "identity=cast(Any, identity)"  # kopf's identity, not from the passwd database


def _git(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, check=False)


def previous_sources(out: Path) -> str | None:
    """Extract into ``out`` the package and manifests of the newest earlier commit whose
    package differs from this checkout's and that this image and the e2e overlay can run
    (older commits have no e2e overlay, or crash under an arbitrary UID); returns that commit,
    or None when there is none (no git history, or none such)."""
    if shutil.which("git") is None:
        return None
    log = _git("log", "--format=%H", "-n", "30", "--", *PACKAGE)
    for commit in log.stdout.decode().split():
        if _git("diff", "--quiet", commit, "--", *PACKAGE).returncode == 0:
            continue  # the same package as this checkout's
        runs = (
            FIX_MARKER
            in _git("show", f"{commit}:lws_operator/controller/operator.py").stdout.decode()
        )
        has_overlay = _git("cat-file", "-e", f"{commit}:{E2E_OVERLAY}/kustomization.yaml")
        if not runs or has_overlay.returncode != 0:
            return None
        archive = _git("archive", commit, *PACKAGE, *MANIFESTS)
        subprocess.run(["tar", "-x", "-C", str(out)], input=archive.stdout, check=True)
        return commit
    return None


@pytest.fixture
def previous_install(e2e: E2E) -> Iterator[tuple[str, str, str]]:
    """(image, overlay, what it is) of an earlier operator, its image imported on the real
    node; the overlay is a path from the repository root, as ``make deploy`` takes it."""
    local = REPO / ".local"
    local.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=local, prefix="upgrade-from-") as tmp:
        commit = previous_sources(Path(tmp))
        if commit is not None:
            image = images.operator_image(Path(tmp), name="lws-operator-previous")
            overlay = str((Path(tmp) / E2E_OVERLAY).relative_to(REPO))
            what = f"the operator of commit {commit[:12]}, with its own manifests"
        else:  # the same content under a second tag: the Deployment still rolls
            current = image_archive(e2e, e2e.image("lws-operator"))
            ref = current.ref.replace("lws-operator:", "lws-operator-previous:", 1)
            image = images.retagged(current, ref)
            overlay = E2E_OVERLAY
            what = "this operator under a second tag (no earlier commit runs in this image)"
        images.import_images(e2e.containerd_socket, [image])
        yield image.ref, overlay, what


async def test_upgrade_restarts_no_pod(
    kube: Kube, namespace: str, e2e: E2E, previous_install: tuple[str, str, str]
) -> None:
    old, old_overlay, what = previous_install
    print(f"\nupgrading from {what}: {old}")
    current = e2e.image("lws-operator")
    make_deploy(e2e.kubeconfig, old, overlay=old_overlay)
    try:
        ns, name = namespace, "upgrade"
        await create_available(kube, ns, lws_body(name, replicas=2, size=3))
        before = snapshot(await group_pods(kube, ns, name))
        sets = await kube.list(resource_path("apps/v1", "statefulsets", namespace=ns))
        generations = {s["metadata"]["name"]: s["metadata"]["generation"] for s in sets["items"]}
    finally:
        make_deploy(e2e.kubeconfig, current)
    await wait_deployment(kube, 2)
    objs = await wait_for_objects(
        kube,
        resource_path("v1", "pods", namespace=OPERATOR_NS),
        lambda o: (
            len(o) == 2 and {p["spec"]["containers"][0]["image"] for p in o.values()} == {current}
        ),
        timeout=TIMEOUT,
        what="only the new image's 2 operator pods (the old ones gone)",
        label_selector="control-plane=controller-manager",
    )
    pods = {p["metadata"]["name"]: p for p in objs.values()}
    holder = await wait_for_objects(
        kube,
        resource_path("coordination.k8s.io/v1", "leases", namespace=OPERATOR_NS),
        lambda o: _holder(o).rsplit("_", 1)[0] in pods,
        timeout=60,
        what="a replica of the new image holding the Lease",
        field_selector="metadata.name=lws-operator",
    )
    assert _holder(holder)
    # The new leader reconciles (a scale-up gets its group), and nothing was restarted.
    await kube.patch(
        resource_path(c.API_VERSION, c.PLURAL, namespace=ns, name=name), {"spec": {"replicas": 3}}
    )
    await wait_lws(kube, ns, name, lambda o: is_available(o, 3), "Available with 3 groups")
    after = snapshot(await group_pods(kube, ns, name))
    assert {n: after[n] for n in before} == before, "pods were restarted by the upgrade"
    sets = await kube.list(resource_path("apps/v1", "statefulsets", namespace=ns))
    now = {s["metadata"]["name"]: s["metadata"]["generation"] for s in sets["items"]}
    changed = {n: (g, now.get(n)) for n, g in generations.items() if n != name and now.get(n) != g}
    assert not changed, f"StatefulSets rewritten by the new operator: {changed}"
    assert not await lws_events(kube, ns, "RecreateGroup")
