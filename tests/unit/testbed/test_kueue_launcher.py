"""Kueue's launcher: its configuration, its webhook configurations as its install makes them
(by URL here), the metrics certificate it insists on, and the build's one-line errors."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from lws_testbed import kueue
from lws_testbed.binaries import BUILD_SCRIPT, pins


def _hook(name: str, group: str, path: str) -> dict[str, Any]:
    return {
        "name": name,
        "admissionReviewVersions": ["v1"],
        "clientConfig": {
            "service": {"name": "webhook-service", "namespace": "system", "path": path}
        },
        "failurePolicy": "Fail",
        "rules": [
            {
                "apiGroups": [group],
                "apiVersions": ["v1"],
                "operations": ["CREATE"],
                "resources": ["x"],
            }
        ],
        "sideEffects": "None",
    }


MANIFESTS = [
    {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "mutating-webhook-configuration"},
        "webhooks": [
            _hook("mpod.kb.io", "", "/mutate--v1-pod"),
            _hook("mworkload.kb.io", "kueue.x-k8s.io", "/mutate-kueue-x-k8s-io-v1beta2-workload"),
        ],
    }
]


def test_webhooks_by_url_with_the_install_namespace_selector() -> None:
    (body,) = kueue.webhook_configurations(MANIFESTS, 9443, b"CA")
    assert body["metadata"]["name"] == kueue.MUTATING_CONFIGURATION
    pod, workload = body["webhooks"]
    assert pod["clientConfig"] == {
        "url": "https://127.0.0.1:9443/mutate--v1-pod",
        "caBundle": "Q0E=",
    }
    assert pod["namespaceSelector"]["matchExpressions"] == [
        {
            "key": "kubernetes.io/metadata.name",
            "operator": "NotIn",
            "values": ["kube-system", "kueue-system"],
        }
    ]
    assert pod["failurePolicy"] == "Fail"
    # Kueue's own kinds are not limited to namespaces (as in its kustomization).
    assert "namespaceSelector" not in workload
    assert MANIFESTS[0]["webhooks"][0]["clientConfig"]["service"]["name"] == "webhook-service"


def test_configuration_for_out_of_cluster() -> None:
    options = kueue.KueueOptions(manage_jobs_without_queue_name=True, feature_gates=(("X", True),))
    cfg = kueue.configuration(options, webhook_port=1, health_port=2, cert_dir=Path("/c"))
    assert cfg["webhook"] == {"host": "127.0.0.1", "port": 1, "certDir": "/c"}
    assert cfg["internalCertManagement"] == {"enable": False}
    assert cfg["leaderElection"] == {"leaderElect": False}
    assert cfg["metrics"] == {"bindAddress": "0"}
    assert cfg["featureGates"] == {"VisibilityOnDemand": False, "X": True}
    assert cfg["manageJobsWithoutQueueName"] is True
    assert "leaderworkerset.x-k8s.io/leaderworkerset" in cfg["integrations"]["frameworks"]


def test_metrics_certificate_written_once(tmp_path: Path) -> None:
    kueue.ensure_metrics_certificate(tmp_path / "certs")
    crt = (tmp_path / "certs" / "tls.crt").read_bytes()
    kueue.ensure_metrics_certificate(tmp_path / "certs")
    assert (tmp_path / "certs" / "tls.crt").read_bytes() == crt
    assert b"BEGIN CERTIFICATE" in crt


def test_metrics_certificate_not_writable_names_the_path(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(kueue.KueueError) as caught:
        kueue.ensure_metrics_certificate(blocker / "certs")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"Kueue needs a certificate at {blocker / 'certs' / 'tls.crt'}")


def test_build_failure_names_the_module(tmp_path: Path) -> None:
    go = shutil.which("go")
    assert go, "Go is required to build Kueue"
    env = {
        "HOME": str(tmp_path),
        "LWS_CACHE_DIR": str(tmp_path / "cache"),
        "PATH": os.environ["PATH"],
        "GOPROXY": "off",
        "GOMODCACHE": str(tmp_path / "modcache"),
        "GOCACHE": str(tmp_path / "gocache"),
    }
    proc = subprocess.run(
        ["bash", str(BUILD_SCRIPT), "kueue"], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode != 0
    first = next(line for line in proc.stderr.splitlines() if line.startswith("build-cluster-bins"))
    version = pins()["KUEUE_VERSION"]
    assert first.startswith(f"build-cluster-bins: downloading sigs.k8s.io/kueue@v{version} failed:")
