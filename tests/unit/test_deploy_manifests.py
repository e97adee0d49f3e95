"""The install manifests agree with the code: the webhook configuration the operator writes,
its names, ports and flags."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from lws_operator.cli import build_parser
from lws_operator.controller.lws import eviction
from lws_operator.controller.runtime.leader import LEASE_NAME
from lws_operator.controller.servers import certs, webhook
from lws_operator.controller.servers.metrics_auth import ACCESS_REVIEWS, TOKEN_REVIEWS

BASE = Path(__file__).resolve().parents[2] / "deploy" / "base"


def docs(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((BASE / name).read_text()) if d]


def test_the_webhook_manifest_is_what_the_operator_registers() -> None:
    manifest, evictions = docs("webhook.yaml")
    written = webhook.webhook_configuration(
        lambda path: webhook.client_config_service("lws-webhook-service", "lws-system", path=path),
        b"",
    )
    for hook in written["webhooks"]:
        del hook["clientConfig"]["caBundle"]
    assert manifest["metadata"]["name"] == written["metadata"]["name"]
    assert manifest["webhooks"] == written["webhooks"]
    client = webhook.client_config_service(
        "lws-webhook-service", "lws-system", path=eviction.EVICTION_WEBHOOK_PATH
    )
    # What the operator writes with its own certificates, before it covers any LWS.
    expected = eviction.configuration(eviction.eviction_webhook(client, None), set())
    assert evictions["metadata"]["name"] == expected["metadata"]["name"]
    assert evictions["metadata"]["annotations"] == expected["metadata"]["annotations"]
    assert evictions["webhooks"] == expected["webhooks"]


def test_rbac_names_the_operators_own_objects() -> None:
    rbac = {(d["kind"], d["metadata"]["name"]): d for d in docs("rbac.yaml")}
    for role, secret in (
        ("lws-webhook-cert-role", certs.SECRET_NAME),
        ("lws-metrics-cert-role", certs.METRICS_SECRET_NAME),
    ):
        cert_rules = rbac["Role", role]["rules"]
        assert cert_rules[0]["resourceNames"] == [secret]
        assert "create" not in cert_rules[0]["verbs"] and cert_rules[1]["verbs"] == ["create"]
    # What the metrics server posts (metrics_auth), and what a scraper needs.
    reviews = {
        (g, r)
        for rule in rbac["ClusterRole", "lws-proxy-role"]["rules"]
        for g in rule["apiGroups"]
        for r in rule["resources"]
    }
    assert {(p.split("/")[2], p.split("/")[-1]) for p in (TOKEN_REVIEWS, ACCESS_REVIEWS)} == reviews
    reader = rbac["ClusterRole", "lws-metrics-reader"]["rules"]
    assert reader == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    lease_rules = rbac["Role", "lws-leader-election-role"]["rules"]
    assert lease_rules[0]["resourceNames"] == [LEASE_NAME]
    hook_rules = rbac["ClusterRole", "lws-webhook-configuration-role"]["rules"]
    assert hook_rules[0]["resourceNames"] == [webhook.CONFIGURATION_NAME]
    # The eviction webhook's configuration is kept with every certificate source.
    (evictions,) = [
        r
        for r in rbac["ClusterRole", "lws-manager-role"]["rules"]
        if r["resources"] == ["validatingwebhookconfigurations"]
    ]
    assert evictions["resourceNames"] == [eviction.CONFIGURATION_NAME]
    manager = rbac["ClusterRole", "lws-manager-role"]["rules"]
    resources = {r for rule in manager for r in rule["resources"]}
    assert {"leaderworkersets/finalizers", "pods/finalizers"} <= resources
    assert "secrets" not in resources  # only through the namespaced Role above


def test_the_deployment_args_parse() -> None:
    (deployment,) = docs("deployment.yaml")
    (manager,) = deployment["spec"]["template"]["spec"]["containers"]
    args = build_parser().parse_args(manager["args"])
    assert args.webhook_service == "lws-webhook-service" and args.leader_elect is True
    assert args.metrics_bind_address == ":8443" and args.health_probe_bind_address == ":8081"
    assert args.metrics_secure is True and args.metrics_cert_dir is None
    ports = {p["name"]: p["containerPort"] for p in manager["ports"]}
    assert ports == {"webhook": args.webhook_port, "metrics": 8443, "health": 8081}
    services = {d["metadata"]["name"]: d for d in docs("services.yaml")}
    assert args.metrics_service in services
    (port,) = services[args.metrics_service]["spec"]["ports"]
    assert (port["name"], port["port"], port["targetPort"]) == ("https", 8443, "metrics")
    assert args.log_format == "json"


def test_metrics_flags() -> None:
    run = ["run", "--metrics-bind-address", "127.0.0.1:0"]
    assert build_parser().parse_args(run).metrics_secure is True
    assert build_parser().parse_args([*run, "--metrics-secure"]).metrics_secure is True
    assert build_parser().parse_args([*run, "--metrics-secure=false"]).metrics_secure is False
