import base64
import json
from typing import Any

import jsonpatch

from lws_operator.api import constants as c
from lws_operator.controller.webhook import (
    POD_WEBHOOK_PATH,
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
    cfg = webhook_configuration({"url": f"https://127.0.0.1:9443{POD_WEBHOOK_PATH}"}, b"CA")
    (hook,) = cfg["webhooks"]
    assert hook["failurePolicy"] == "Fail" and hook["sideEffects"] == "None"
    assert hook["objectSelector"] == {
        "matchExpressions": [{"key": c.SET_NAME_LABEL, "operator": "Exists"}]
    }
    assert hook["rules"][0]["operations"] == ["CREATE"]
    assert hook["rules"][0]["resources"] == ["pods"]
    assert base64.b64decode(hook["clientConfig"]["caBundle"]) == b"CA"
