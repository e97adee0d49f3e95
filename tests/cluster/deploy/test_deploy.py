"""The kustomize install: every overlay builds; the kind overlay applies server-side with Pod
Security `restricted` enforced on lws-system (the operator's pods are admitted); the deployed
ServiceAccount's RBAC is enough for the operator (run with a token of it) and refuses the rest.

The session operator is paused for this module: applying the install points the webhook
configuration at the in-cluster Service (which kwok's simulated pods cannot serve) until an
operator registers it again, and two operators must never reconcile the same objects.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import ssl
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from lws_operator.api import constants as c
from lws_operator.controller.lws import eviction
from lws_operator.controller.servers import certs
from lws_operator.kube.client import ApiError, Kube
from lws_operator.kube.paths import resource_path
from lws_operator.plan.ds.revision import compute_revision
from lws_testbed.lws_api import until
from lws_testbed.operator_process import WEBHOOK_CONFIG, WEBHOOK_CONFIGS, start_operator
from lws_testbed.wait import wait_for_objects
from tests.cluster.controller.helpers import (
    create_available,
    is_available,
    lws_body,
    lws_path,
    wait_lws,
    wait_pods,
)
from tests.cluster.deploy.helpers import (
    DEPLOY,
    NAMESPACE,
    OVERLAYS,
    denials,
    find,
    free_port,
    kustomize,
    run_kubectl,
    sa_token,
    scrape,
    service_account_kubeconfig,
    wait_namespace_gone,
)
from tests.cluster.disaggregated.helpers import (
    ds_body,
    ds_path,
    role,
    set_scale,
    settled,
    wait_children,
)
from tests.cluster.disruption.helpers import evict

MANAGER = "lws-controller-manager"
RBAC = "rbac.authorization.k8s.io/v1"
CLUSTER_SCOPED = (
    *(
        (RBAC, "clusterroles", name)
        for name in (
            "lws-manager-role",
            "lws-webhook-configuration-role",
            "lws-proxy-role",
            "lws-metrics-reader",
        )
    ),
    *(
        (RBAC, "clusterrolebindings", name)
        for name in (
            "lws-manager-rolebinding",
            "lws-webhook-configuration-rolebinding",
            "lws-proxy-rolebinding",
            "lws-metrics-reader-rolebinding",
        )
    ),
)
METRICS_SERVICE = "lws-controller-manager-metrics-service"


def own_revision(revision: dict[str, Any]) -> bool:
    refs = revision["metadata"].get("ownerReferences") or []
    return all(ref.get("kind") == c.KIND for ref in refs)


def pod_of(deployment: dict[str, Any], name: str) -> dict[str, Any]:
    template = copy.deepcopy(deployment["spec"]["template"])
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, **template["metadata"]},
        "spec": template["spec"],
    }


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_overlay_builds(overlay: str) -> None:
    docs = kustomize(overlay)
    kinds = {d["kind"] for d in docs}
    assert {"CustomResourceDefinition", "Namespace", "Deployment", "Service"} <= kinds
    assert "ValidatingAdmissionPolicy" in kinds and "MutatingWebhookConfiguration" in kinds
    ns = find(docs, "Namespace", NAMESPACE)
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    deployment = find(docs, "Deployment", MANAGER)
    assert deployment["spec"]["replicas"] == 2
    spec = deployment["spec"]["template"]["spec"]
    (manager,) = spec["containers"]
    sc = manager["securityContext"]
    assert sc["allowPrivilegeEscalation"] is False and sc["readOnlyRootFilesystem"] is True
    assert sc["capabilities"] == {"drop": ["ALL"]} and sc["runAsNonRoot"] is True
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    for key in ("runAsUser", "runAsGroup", "fsGroup"):  # OpenShift assigns them
        assert key not in spec["securityContext"] and key not in sc
    assert manager["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert manager["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert "--leader-elect=true" in manager["args"]
    # Metrics as upstream's: HTTPS on 8443 behind token review (no --metrics-secure=false).
    assert "--metrics-bind-address=:8443" in manager["args"]
    assert not any(a.startswith("--metrics-secure") for a in manager["args"])
    metrics_service = find(docs, "Service", METRICS_SERVICE)
    assert metrics_service["spec"]["ports"] == [
        {"name": "https", "port": 8443, "protocol": "TCP", "targetPort": "metrics"}
    ]
    roles = {d["metadata"]["name"]: d for d in docs if d["kind"] in ("Role", "ClusterRole")}
    assert roles["lws-metrics-reader"]["rules"] == [
        {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}
    ]
    assert roles["lws-proxy-role"]["rules"] == [
        {
            "apiGroups": ["authentication.k8s.io"],
            "resources": ["tokenreviews"],
            "verbs": ["create"],
        },
        {
            "apiGroups": ["authorization.k8s.io"],
            "resources": ["subjectaccessreviews"],
            "verbs": ["create"],
        },
    ]
    bindings = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ClusterRoleBinding"}
    for binding in ("lws-proxy-rolebinding", "lws-metrics-reader-rolebinding"):
        assert bindings[binding]["subjects"] == [
            {"kind": "ServiceAccount", "name": MANAGER, "namespace": NAMESPACE}
        ]
    webhook = find(docs, "MutatingWebhookConfiguration", "lws-mutating-webhook-configuration")
    annotations = webhook["metadata"].get("annotations") or {}
    everywhere = {
        "lws-manager-role",
        "lws-leader-election-role",
        "lws-proxy-role",
        "lws-metrics-reader",
    }
    if overlay == "kind":
        assert "--webhook-service=lws-webhook-service" in manager["args"]
        assert f"--metrics-service={METRICS_SERVICE}" in manager["args"]
        assert set(roles) == everywhere | {
            "lws-webhook-configuration-role",
            "lws-webhook-cert-role",
            "lws-metrics-cert-role",
        }
        assert roles["lws-metrics-cert-role"]["rules"][0]["resourceNames"] == [
            "lws-metrics-server-cert"
        ]
        assert not annotations
    else:
        assert "--cert-dir=/tmp/k8s-webhook-server/serving-certs" in manager["args"]
        assert "--metrics-cert-dir=/tmp/k8s-metrics-server/serving-certs" in manager["args"]
        assert not any(
            a.startswith(("--webhook-service", "--metrics-service")) for a in manager["args"]
        )
        # The operator writes neither the certificates nor the webhook configuration.
        assert set(roles) == everywhere
        volumes = {v["name"]: v for v in spec["volumes"]}
        assert volumes["cert"]["secret"]["secretName"] == "lws-webhook-server-cert"
        assert volumes["metrics-cert"]["secret"]["secretName"] == "lws-metrics-server-cert"
        mounts = {m["name"]: m["mountPath"] for m in manager["volumeMounts"]}
        assert mounts["metrics-cert"] == "/tmp/k8s-metrics-server/serving-certs"
    if overlay == "openshift":
        service = find(docs, "Service", "lws-webhook-service")
        assert service["metadata"]["annotations"] == {
            "service.beta.openshift.io/serving-cert-secret-name": "lws-webhook-server-cert"
        }
        assert metrics_service["metadata"]["annotations"] == {
            "service.beta.openshift.io/serving-cert-secret-name": "lws-metrics-server-cert"
        }
        assert annotations == {"service.beta.openshift.io/inject-cabundle": "true"}
    if overlay == "cert-manager":
        assert annotations == {"cert-manager.io/inject-ca-from": "lws-system/lws-serving-cert"}
        cert = find(docs, "Certificate", "lws-serving-cert")
        assert cert["spec"]["secretName"] == "lws-webhook-server-cert"
        assert "lws-webhook-service.lws-system.svc" in cert["spec"]["dnsNames"]
        metrics_cert = find(docs, "Certificate", "lws-metrics-cert")
        assert metrics_cert["spec"]["secretName"] == "lws-metrics-server-cert"
        assert f"{METRICS_SERVICE}.lws-system.svc" in metrics_cert["spec"]["dnsNames"]
    assert not [d for d in docs if d["kind"] == "ServiceMonitor"]  # only with its component


@pytest.mark.parametrize(
    ("overlay", "component", "ca"),
    [
        ("kind", "prometheus", {"secret": {"name": "lws-metrics-server-cert", "key": "ca.crt"}}),
        (
            "cert-manager",
            "prometheus",
            {"secret": {"name": "lws-metrics-server-cert", "key": "ca.crt"}},
        ),
        (
            "openshift",
            "prometheus-openshift",
            {"configMap": {"name": "lws-metrics-serving-ca", "key": "service-ca.crt"}},
        ),
    ],
)
def test_the_service_monitor_scrapes_with_a_reader_token_and_verifies_the_server(
    overlay: str, component: str, ca: dict[str, Any]
) -> None:
    docs = kustomize(overlay, component)
    monitor = find(docs, "ServiceMonitor", "lws-controller-manager-metrics-monitor")
    service = find(docs, "Service", METRICS_SERVICE)
    labels = service["metadata"]["labels"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= labels.items()
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
    assert (endpoint["scheme"], endpoint["path"]) == ("https", "/metrics")
    # No file of the Prometheus pod (OpenShift's user-workload monitoring refuses those).
    assert "bearerTokenFile" not in endpoint and "caFile" not in endpoint["tlsConfig"]
    assert endpoint["tlsConfig"] == {
        "serverName": f"{METRICS_SERVICE}.{NAMESPACE}.svc",
        "ca": ca,
    }
    token = endpoint["authorization"]["credentials"]
    secret = find(docs, "Secret", token["name"])
    assert secret["type"] == "kubernetes.io/service-account-token" and token["key"] == "token"
    scraper = secret["metadata"]["annotations"]["kubernetes.io/service-account.name"]
    (binding,) = [
        d
        for d in docs
        if d["kind"] == "ClusterRoleBinding"
        and {"kind": "ServiceAccount", "name": scraper, "namespace": NAMESPACE} in d["subjects"]
    ]
    assert binding["roleRef"]["name"] == "lws-metrics-reader"
    if overlay == "openshift":
        bundle = find(docs, "ConfigMap", "lws-metrics-serving-ca")
        assert bundle["metadata"]["annotations"] == {
            "service.beta.openshift.io/inject-cabundle": "true"
        }


@pytest.fixture(scope="module")
async def installed(
    kube: Kube,
    kubeconfig: Path,
    lws_api: None,
    pause_session_operator: Callable[[], contextlib.AbstractAsyncContextManager[None]],
) -> AsyncIterator[None]:
    """The kind overlay, applied server-side like a user does; removed afterwards (not the
    CRD and policy, which the session shares)."""
    async with pause_session_operator():
        # The paused operator registered its webhook by URL; the install's points at the
        # Service (a merge of both would be invalid). The next operator registers it again.
        await kube.delete(f"{WEBHOOK_CONFIGS}/{WEBHOOK_CONFIG}")
        await kube.delete(
            f"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/"
            f"{eviction.CONFIGURATION_NAME}"
        )
        run_kubectl(
            "--kubeconfig",
            str(kubeconfig),
            "apply",
            "--server-side",
            "--force-conflicts",
            "-k",
            str(DEPLOY / "overlays" / "kind"),
        )
        try:
            yield
        finally:
            await kube.delete(resource_path("v1", "namespaces", name=NAMESPACE))
            for api, plural, name in CLUSTER_SCOPED:
                await kube.delete(resource_path(api, plural, name=name))
            await wait_namespace_gone(kube, NAMESPACE)


async def test_pod_security_restricted_admits_the_operator(kube: Kube, installed: None) -> None:
    # The Deployment's own pods were admitted under enforce=restricted (the ReplicaSet
    # controller could create them).
    await wait_for_objects(
        kube,
        resource_path("v1", "pods", namespace=NAMESPACE),
        lambda objs: len(objs) == 2,
        timeout=60,
        what="the operator Deployment's 2 pods created in lws-system",
        label_selector="control-plane=controller-manager",
    )
    pods_path = resource_path("v1", "pods", namespace=NAMESPACE)
    # And every overlay's pod template passes (dry run: admission runs, nothing is stored).
    for overlay in OVERLAYS:
        deployment = find(kustomize(overlay), "Deployment", MANAGER)
        await kube.create(pods_path, pod_of(deployment, f"psa-{overlay}"), dry_run=True)
    # Enforcement is really on: a pod that is not restricted is refused.
    loose = pod_of(find(kustomize("kind"), "Deployment", MANAGER), "psa-loose")
    del loose["spec"]["containers"][0]["securityContext"]
    with pytest.raises(ApiError) as refused:
        await kube.create(pods_path, loose, dry_run=True)
    assert refused.value.status == 403 and "violates PodSecurity" in refused.value.message


async def test_other_overlays_apply_server_side(kubeconfig: Path, installed: None) -> None:
    """openshift and cert-manager, and the Prometheus components, as a server-side dry run
    (cert-manager's own kinds are not installed here, so its Issuer and Certificate are left
    out; the CRD is the kind overlay's, applied already)."""
    import yaml

    for overlay, components in (
        ("openshift", ()),
        ("cert-manager", ()),
        ("kind", ("prometheus",)),
        ("openshift", ("prometheus-openshift",)),
    ):
        # (No ServiceMonitor CRD here either: the component's other objects are applied.)
        docs = [
            d
            for d in kustomize(overlay, *components)
            if not d["apiVersion"].startswith(("cert-manager.io", "monitoring.coreos.com"))
            and d["kind"] != "CustomResourceDefinition"
        ]
        run_kubectl(
            "--kubeconfig",
            str(kubeconfig),
            "apply",
            "--server-side",
            "--force-conflicts",
            "--dry-run=server",
            "-f",
            "-",
            stdin=yaml.safe_dump_all(docs),
        )


@pytest.fixture(scope="module")
async def sa_kube(
    kube: Kube, kubeconfig: Path, installed: None, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[Kube, Path]]:
    path = await service_account_kubeconfig(
        kube, kubeconfig, tmp_path_factory.mktemp("sa") / "sa.kubeconfig"
    )
    async with await Kube.connect(path, user_agent="lws-rbac-test") as client:
        yield client, path


async def test_the_service_account_runs_the_operator(
    kube: Kube,
    sa_kube: tuple[Kube, Path],
    namespace: str,
    tmp_path: Path,
) -> None:
    """The operator with only the deployed ServiceAccount's rights (and leader election on its
    Lease): create with exclusive placement and per-replica Services, scale, recreate a group,
    roll out, delete. Then the certificate Secret path of in-cluster mode."""
    client, sa_config = sa_kube
    log = tmp_path / "operator.log"
    metrics_port = free_port()
    op = await start_operator(
        kube,
        sa_config,
        log,
        "--leader-elect",
        "--operator-namespace",
        NAMESPACE,
        # Secure metrics as in cluster: certificate in its Secret, scrapes reviewed.
        "--metrics-bind-address",
        f"127.0.0.1:{metrics_port}",
        "--metrics-service",
        METRICS_SERVICE,
    )
    try:
        # As upstream's e2e: the ServiceAccount's own token may read the metrics (the
        # operator's TokenReview and SubjectAccessReview need lws-proxy-role); the server's
        # certificate is the Secret's, for the Service's name.
        secret = await kube.get(
            resource_path("v1", "secrets", namespace=NAMESPACE, name=certs.METRICS_SECRET_NAME)
        )
        ca = base64.b64decode(secret["data"]["ca.crt"]).decode()
        status, text = await scrape(
            metrics_port,
            token=sa_token(sa_config),
            verify=ssl.create_default_context(cadata=ca),
            server_hostname=f"{METRICS_SERVICE}.{NAMESPACE}.svc",
        )
        assert status == 200 and "controller_runtime_webhook_requests_total" in text, text
        await _follows_a_renewal_by_another_replica(kube, metrics_port, sa_token(sa_config))
        ns, name = namespace, "rbac"
        body = lws_body(
            name,
            replicas=2,
            size=2,
            subdomain="UniquePerReplica",
            annotations={c.EXCLUSIVE_KEY_ANNOTATION: "topology.kubernetes.io/rack"},
        )
        lws = await create_available(kube, ns, body)
        # An eviction: the webhook reads the pod and records a move; the reconcile moves the
        # group (surge group, release, rebuild).
        refused = await evict(kube, ns, f"{name}-1-1")
        assert refused is not None and refused.status == 429, refused
        await wait_for_objects(
            kube,
            resource_path("events.k8s.io/v1", "events", namespace=ns),
            lambda objs: any(e.get("reason") == "MovedGroup" for e in objs.values()),
            timeout=90,
            what="a MovedGroup event",
            field_selector=f"regarding.uid={lws['metadata']['uid']}",
        )
        await wait_lws(kube, ns, name, lambda o: is_available(o, 2), "Available after the move")
        await kube.patch(lws_path(ns, name), {"spec": {"replicas": 3}})
        await wait_lws(kube, ns, name, lambda o: is_available(o, 3), "Available with 3")

        await kube.delete(resource_path("v1", "pods", namespace=ns, name=f"{name}-0-1"))
        await wait_for_objects(
            kube,
            resource_path("events.k8s.io/v1", "events", namespace=ns),
            lambda objs: any(e.get("reason") == "RecreateGroup" for e in objs.values()),
            timeout=60,
            what="a RecreateGroup event",
            field_selector=f"regarding.uid={lws['metadata']['uid']}",
        )
        await wait_lws(kube, ns, name, lambda o: is_available(o, 3), "Available again")

        worker = {
            "name": "worker",
            "image": "registry.k8s.io/pause:3.10",
            "env": [{"name": "V", "value": "2"}],
        }
        template = {"spec": {"containers": [worker]}}
        await kube.patch(
            lws_path(ns, name), {"spec": {"leaderWorkerTemplate": {"workerTemplate": template}}}
        )
        await wait_lws(
            kube,
            ns,
            name,
            lambda o: is_available(o, 3) and (o.get("status") or {}).get("updatedReplicas") == 3,
            "rolled out",
            timeout=180,
        )
        # The old revision is deleted once the update is complete (controllerrevisions delete).
        await wait_for_objects(
            kube,
            resource_path("apps/v1", "controllerrevisions", namespace=ns),
            lambda objs: sum(own_revision(r) for r in objs.values()) == 1,
            timeout=30,
            what="one LeaderWorkerSet revision left",
            label_selector=f"{c.SET_NAME_LABEL}={name}",
        )

        await kube.delete(lws_path(ns, name))
        await wait_pods(kube, ns, name, lambda pods: not pods, "all pods gone")
        await _runs_a_disaggregated_set(kube, ns)
        op.check_alive()
    finally:
        await op.stop()
    lease = await kube.get(
        resource_path("coordination.k8s.io/v1", "leases", namespace=NAMESPACE, name="lws-operator")
    )
    assert lease["spec"]["holderIdentity"] == ""  # released on a clean stop
    text = log.read_text()
    assert not denials(text), text[-3000:]

    # In-cluster certificate management: create, read, replace and watch its own Secret.
    first = await certs.ensure_secret_cert(client, namespace=NAMESPACE, service="svc-a")
    again = await certs.ensure_secret_cert(client, namespace=NAMESPACE, service="svc-a")
    assert again.leaf == first.leaf
    renewed = await certs.ensure_secret_cert(client, namespace=NAMESPACE, service="svc-b")
    assert renewed.leaf != first.leaf
    secrets = resource_path("v1", "secrets", namespace=NAMESPACE)
    own = f"metadata.name={certs.SECRET_NAME}"
    assert len((await client.list(secrets, field_selector=own))["items"]) == 1
    async for kind, _ in client.watch(secrets, field_selector=own, timeout_seconds=5):
        assert kind == "ADDED"
        break


async def _runs_a_disaggregated_set(kube: Kube, ns: str) -> None:
    """A DisaggregatedSet under the ServiceAccount's rights: its children and the scaler of
    its External role created, the role scaled through /scale, the set rolled out (children
    created, scaled and deleted, Services made and removed), then deleted."""
    created = await kube.create(
        ds_path(ns), ds_body("rbac-ds", role("prefill", 1, external=True), role("decode", 1))
    )
    rev = compute_revision(created["spec"]["roles"])
    first = {f"rbac-ds-0-{rev}-prefill": 1, f"rbac-ds-0-{rev}-decode": 1}
    await wait_children(kube, ns, "rbac-ds", lambda o: settled(o, first), "created")
    await set_scale(kube, ns, "rbac-ds-prefill", 2)
    scaled = {**first, f"rbac-ds-0-{rev}-prefill": 2}
    await wait_children(kube, ns, "rbac-ds", lambda o: settled(o, scaled), "scaled by /scale")
    roles = created["spec"]["roles"]
    for r in roles:
        r["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["image"] = (
            "registry.k8s.io/pause:3.9"
        )
    rolled = await kube.patch(ds_path(ns, "rbac-ds"), {"spec": {"roles": roles}})
    new = compute_revision(rolled["spec"]["roles"])
    want = {f"rbac-ds-0-{new}-prefill": 2, f"rbac-ds-0-{new}-decode": 1}
    await wait_children(kube, ns, "rbac-ds", lambda o: settled(o, want), "rolled out", 180)
    await wait_for_objects(
        kube,
        resource_path("v1", "services", namespace=ns),
        lambda objs: {o["metadata"]["name"] for o in objs.values()} == {f"{n}-prv" for n in want},
        timeout=60,
        what="the new children's Services only",
        label_selector="disaggregatedset.x-k8s.io/name=rbac-ds",
    )
    await kube.delete(ds_path(ns, "rbac-ds"))
    await wait_children(kube, ns, "rbac-ds", lambda o: not o, "gone")


async def _follows_a_renewal_by_another_replica(kube: Kube, port: int, token: str) -> None:
    """Another replica renews the metrics certificate (here: the test writes a new one into
    the Secret): the operator watches the Secret and serves the new one."""
    path = resource_path("v1", "secrets", namespace=NAMESPACE, name=certs.METRICS_SECRET_NAME)
    secret = await kube.get(path)
    names = certs.service_dns_names(METRICS_SERVICE, NAMESPACE)
    fresh = certs.issue(dns_names=names, ca_name="another-replica")
    body = certs._secret_body(certs.METRICS_SECRET_NAME, NAMESPACE, fresh)
    body["metadata"]["resourceVersion"] = secret["metadata"]["resourceVersion"]
    await kube.replace(path, body)
    verify = ssl.create_default_context(cadata=fresh.ca.cert_pem.decode())

    async def serves_it() -> bool:
        try:
            status, _ = await scrape(port, token=token, verify=verify, server_hostname=names[0])
        except aiohttp.ClientConnectorCertificateError:
            return False
        return status == 200

    # (What a server presents cannot be watched: asked again until it changes, bounded.)
    await until(serves_it, timeout=30, what="the renewed metrics certificate served")


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", resource_path("v1", "secrets"), None),
        ("GET", resource_path("v1", "secrets", namespace=NAMESPACE, name="other"), None),
        ("GET", resource_path("v1", "secrets", namespace="kube-system"), None),
        ("DELETE", resource_path("v1", "namespaces", name="default"), None),
        # (ConfigMaps: list, watch, create and patch for the restart histories; never delete)
        ("DELETE", resource_path("v1", "configmaps", namespace=NAMESPACE, name="x"), None),
        ("PATCH", resource_path("v1", "nodes", name="gpu-node-0"), {"metadata": {}}),
        ("POST", resource_path("v1", "pods", namespace="default"), {"metadata": {}}),
        ("PATCH", ds_path("default", "x"), {"metadata": {}}),
        ("DELETE", ds_path("default", "x"), None),
        (
            "GET",
            resource_path("coordination.k8s.io/v1", "leases", namespace="kube-system", name="x"),
            None,
        ),
        (
            "PUT",
            "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/other",
            {"metadata": {"name": "other"}},
        ),
        ("GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles", None),
    ],
    ids=[
        "list-secrets-everywhere",
        "read-another-secret",
        "list-kube-system-secrets",
        "delete-a-namespace",
        "delete-a-configmap",
        "patch-a-node",
        "create-a-pod",
        "patch-a-disaggregatedset-spec",
        "delete-a-disaggregatedset",
        "read-another-lease",
        "write-another-webhook-configuration",
        "list-clusterroles",
    ],
)
async def test_requests_outside_the_role_are_refused(
    sa_kube: tuple[Kube, Path], method: str, path: str, body: dict[str, Any] | None
) -> None:
    client, _ = sa_kube
    content_type = "application/merge-patch+json" if method == "PATCH" else "application/json"
    with pytest.raises(ApiError) as refused:
        await client.request(method, path, body=body, content_type=content_type)
    assert refused.value.status == 403, refused.value
