import base64
import json
import ssl
from typing import Any

import aiohttp
import jsonpatch

from lws_operator.api import constants as c
from lws_operator.api import zero_values
from lws_operator.controller.servers import certs
from lws_operator.controller.servers.webhook import (
    LWS_WEBHOOK_NAME,
    LWS_WEBHOOK_PATH,
    POD_WEBHOOK_NAME,
    POD_WEBHOOK_PATH,
    WebhookServer,
    client_config_url,
    lws_review_response,
    review_response,
    webhook_configuration,
)


def review(pod: dict[str, Any], namespace: str = "ns") -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": "u-1", "operation": "CREATE", "namespace": namespace, "object": pod},
    }


def leader_pod() -> dict[str, Any]:
    return {
        "metadata": {
            "name": "sample-0",
            "labels": {c.SET_NAME_LABEL: "sample", c.WORKER_INDEX_LABEL: "0"},
            "annotations": {c.SIZE_ANNOTATION: "2"},
        },
        "spec": {"subdomain": "sample", "containers": [{"name": "c", "image": "i"}]},
    }


def test_allowed_with_a_patch_that_applies() -> None:
    pod = leader_pod()
    answer = review_response(review(pod), None)
    assert answer["kind"] == "AdmissionReview"
    response = answer["response"]
    assert response["uid"] == "u-1" and response["allowed"] is True
    assert response["patchType"] == "JSONPatch"
    patch = json.loads(base64.b64decode(response["patch"]))
    patched = jsonpatch.apply_patch(leader_pod(), patch)
    assert patched["metadata"]["labels"][c.GROUP_INDEX_LABEL] == "0"
    env = {e["name"]: e["value"] for e in patched["spec"]["containers"][0]["env"]}
    # the namespace comes from the request when the object lacks it
    assert env["LWS_LEADER_ADDRESS"] == "sample-0.sample.ns"


def test_bad_pod_is_denied_with_the_reason() -> None:
    pod = leader_pod()
    del pod["metadata"]["annotations"]
    response = review_response(review(pod), None)["response"]
    assert response["allowed"] is False
    assert response["status"]["code"] == 400
    assert c.SIZE_ANNOTATION in response["status"]["message"]


def test_other_operations_pass_untouched() -> None:
    r = review(leader_pod())
    r["request"]["operation"] = "UPDATE"
    assert review_response(r, None)["response"] == {"uid": "u-1", "allowed": True}


def test_configuration_selects_lws_pods_on_create_and_fails_closed() -> None:
    cfg = webhook_configuration(lambda path: client_config_url("127.0.0.1", 9443, path), b"CA")
    pods, lws = cfg["webhooks"]
    assert pods["name"] == POD_WEBHOOK_NAME
    assert pods["failurePolicy"] == "Fail" and pods["sideEffects"] == "None"
    assert pods["objectSelector"] == {
        "matchExpressions": [{"key": c.SET_NAME_LABEL, "operator": "Exists"}]
    }
    assert pods["rules"][0]["operations"] == ["CREATE"]
    assert pods["rules"][0]["resources"] == ["pods"]
    assert pods["clientConfig"]["url"] == f"https://127.0.0.1:9443{POD_WEBHOOK_PATH}"
    assert base64.b64decode(pods["clientConfig"]["caBundle"]) == b"CA"
    assert lws["name"] == LWS_WEBHOOK_NAME
    assert lws["clientConfig"]["url"] == f"https://127.0.0.1:9443{LWS_WEBHOOK_PATH}"
    assert base64.b64decode(lws["clientConfig"]["caBundle"]) == b"CA"


def test_lws_webhook_sees_only_writes_with_go_zero_values() -> None:
    (lws,) = webhook_configuration(lambda path: {"url": path}, b"")["webhooks"][1:]
    assert lws["rules"] == [
        {
            "apiGroups": [c.GROUP],
            "apiVersions": [c.VERSION],
            "operations": ["CREATE", "UPDATE"],
            "resources": [c.PLURAL],
            "scope": "Namespaced",
        }
    ]
    assert lws["matchConditions"] == [
        {"name": "go-zero-values", "expression": zero_values.match_condition()}
    ]
    assert lws["failurePolicy"] == "Fail" and lws["reinvocationPolicy"] == "IfNeeded"


def lws_review(obj: dict[str, Any], operation: str = "CREATE") -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": "u-2", "operation": operation, "namespace": "ns", "object": obj},
    }


def test_lws_zero_values_are_patched_to_upstreams_defaults() -> None:
    obj = {
        "spec": {
            "rolloutStrategy": {"type": ""},
            "leaderWorkerTemplate": {"size": 2, "restartPolicy": ""},
        }
    }
    response = lws_review_response(lws_review(obj, "UPDATE"))["response"]
    assert response["uid"] == "u-2" and response["allowed"] is True
    patch = json.loads(base64.b64decode(response["patch"]))
    assert sorted(patch, key=lambda op: op["path"]) == [
        {
            "op": "replace",
            "path": "/spec/leaderWorkerTemplate/restartPolicy",
            "value": "RecreateGroupOnPodRestart",
        },
        {"op": "replace", "path": "/spec/rolloutStrategy/type", "value": "RollingUpdate"},
    ]


def test_lws_without_zero_values_is_allowed_unchanged() -> None:
    for obj in ({"spec": {"rolloutStrategy": {"type": "RollingUpdate"}}}, {}, {"spec": None}):
        response = lws_review_response(lws_review(obj))["response"]
        assert response == {"uid": "u-2", "allowed": True}


async def test_every_endpoint_answers_reviews_refuses_bad_json_and_reports() -> None:
    """The server over TLS on loopback: each path answers a review, answers 400 to a body that
    is not JSON, and reports (path, status) for the metrics."""
    server = WebhookServer("127.0.0.1", 0)
    cert = certs.issue(dns_names=("localhost",), ip_addresses=("127.0.0.1",))
    server.load(cert)
    reported: list[tuple[str, int]] = []
    server.on_request = lambda path, status, _seconds: reported.append((path, status))

    async def evict(body: dict[str, Any]) -> dict[str, Any]:
        return {"kind": "AdmissionReview", "response": {"uid": body["request"]["uid"]}}

    server.evictions = ("/evict", evict)
    port = await server.start()
    context = ssl.create_default_context(cadata=cert.ca.cert_pem.decode())
    try:
        async with aiohttp.ClientSession(base_url=f"https://127.0.0.1:{port}") as session:

            async def post(path: str, body: bytes) -> tuple[int, Any]:
                async with session.post(path, data=body, ssl=context) as r:
                    return r.status, (await r.json() if r.status == 200 else await r.text())

            status, answer = await post(POD_WEBHOOK_PATH, json.dumps(review(leader_pod())).encode())
            assert status == 200 and answer["response"]["allowed"] is True
            assert answer["response"]["patchType"] == "JSONPatch"
            lws = {"metadata": {"name": "l"}, "spec": {"rolloutStrategy": {"type": ""}}}
            status, answer = await post(LWS_WEBHOOK_PATH, json.dumps(review(lws)).encode())
            assert status == 200 and answer["response"]["patchType"] == "JSONPatch"
            status, answer = await post("/evict", json.dumps(review({})).encode())
            assert status == 200 and answer["response"] == {"uid": "u-1"}
            for path in (POD_WEBHOOK_PATH, LWS_WEBHOOK_PATH, "/evict"):
                status, text = await post(path, b"{not json")
                assert status == 400 and "not an AdmissionReview" in text
    finally:
        await server.stop()
    assert reported == [
        (POD_WEBHOOK_PATH, 200),
        (LWS_WEBHOOK_PATH, 200),
        ("/evict", 200),
        (POD_WEBHOOK_PATH, 400),
        (LWS_WEBHOOK_PATH, 400),
        ("/evict", 400),
    ]
