import pytest

from lws_operator.plan.meta import pod_ready
from lws_testbed.simulate import (
    HOLD_READY_ANNOTATION,
    failed_status,
    pod_ip_for,
    ready_status,
    restarted_status,
    unready_status,
)


def pod() -> dict:
    return {
        "metadata": {"name": "p", "namespace": "ns", "resourceVersion": "7"},
        "spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]},
        "status": {
            "phase": "Running",
            "containerStatuses": [
                {"name": "a", "restartCount": 0, "state": {"running": {"startedAt": "t0"}}},
                {"name": "b", "restartCount": 3, "state": {"running": {"startedAt": "t1"}}},
            ],
        },
    }


def test_restart_bumps_only_the_named_container() -> None:
    status = restarted_status(pod(), "b")
    a, b = status["containerStatuses"]
    assert a["restartCount"] == 0 and "lastState" not in a
    assert b["restartCount"] == 4
    assert b["lastState"]["terminated"]["startedAt"] == "t1"
    assert "running" in b["state"]


def test_restart_defaults_to_first_container_and_does_not_mutate_input() -> None:
    original = pod()
    status = restarted_status(original)
    assert status["containerStatuses"][0]["restartCount"] == 1
    assert original["status"]["containerStatuses"][0]["restartCount"] == 0


def test_restart_errors_name_the_problem() -> None:
    with pytest.raises(ValueError, match="no container 'zz'"):
        restarted_status(pod(), "zz")
    with pytest.raises(ValueError, match="no container statuses"):
        restarted_status({"metadata": {"name": "p"}, "status": {}})


def test_failed_status_terminates_every_container() -> None:
    status = failed_status(pod())
    assert status["phase"] == "Failed"
    assert [c["name"] for c in status["containerStatuses"]] == ["a", "b"]
    assert all("terminated" in c["state"] for c in status["containerStatuses"])
    assert {c["type"]: c["status"] for c in status["conditions"]} == {
        "Ready": "False",
        "ContainersReady": "False",
    }


# --- make_ready / make_unready: the status builders -------------------------------------------


def held_pod() -> dict:
    """A scheduled pod that kwok left Pending (hold-ready annotation)."""
    return {
        "metadata": {
            "name": "p",
            "namespace": "ns",
            "uid": "u-1",
            "resourceVersion": "7",
            "annotations": {HOLD_READY_ANNOTATION: ""},
        },
        "spec": {
            "nodeName": "gpu-node-0",
            "containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}],
            "initContainers": [
                {"name": "init", "image": "i"},
                {"name": "sidecar", "image": "s", "restartPolicy": "Always"},
            ],
            "readinessGates": [{"conditionType": "example.com/gate"}],
        },
        "status": {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "True"}],
        },
    }


def test_ready_status_is_what_kwok_pod_ready_writes() -> None:
    status = ready_status(held_pod(), pod_ip="10.1.2.3", host_ip="10.0.0.1", now="T")
    assert status["phase"] == "Running"
    assert status["startTime"] == "T"
    assert {c["type"]: c["status"] for c in status["conditions"]} == {
        "Initialized": "True",
        "Ready": "True",
        "ContainersReady": "True",
        "example.com/gate": "True",
    }
    assert status["containerStatuses"] == [
        {
            "name": n,
            "image": i,
            "ready": True,
            "restartCount": 0,
            "state": {"running": {"startedAt": "T"}},
        }
        for n, i in (("a", "x"), ("b", "y"))
    ]
    init, sidecar = status["initContainerStatuses"]
    assert init["state"]["terminated"]["reason"] == "Completed" and init["ready"]
    assert sidecar["started"] and "running" in sidecar["state"]
    assert status["podIP"] == "10.1.2.3" and status["podIPs"] == [{"ip": "10.1.2.3"}]
    assert status["hostIP"] == "10.0.0.1" and status["hostIPs"] == [{"ip": "10.0.0.1"}]


def test_ready_status_without_host_ip_or_init_containers() -> None:
    pod = held_pod()
    del pod["spec"]["initContainers"], pod["spec"]["readinessGates"]
    status = ready_status(pod, pod_ip="10.1.0.1", host_ip=None)
    assert "hostIP" not in status and "initContainerStatuses" not in status
    assert [c["type"] for c in status["conditions"]] == ["Initialized", "Ready", "ContainersReady"]
    assert pod_ready({"status": status})


def test_pod_ip_is_kept_or_derived_from_the_uid() -> None:
    pod = held_pod()
    derived = pod_ip_for(pod)
    assert derived.startswith("10.1.") and derived == pod_ip_for(held_pod())
    assert int(derived.rsplit(".", 1)[1]) in range(1, 255)
    other = held_pod()
    other["metadata"]["uid"] = "u-2"
    assert pod_ip_for(other) != derived
    pod["status"]["podIP"] = "10.0.3.4"
    assert pod_ip_for(pod) == "10.0.3.4"


def test_unready_status_keeps_the_pod_running() -> None:
    pod = pod_running()
    status = unready_status(pod, now="T")
    assert "phase" not in status  # a strategic-merge patch: Running stays
    assert {c["type"]: c["status"] for c in status["conditions"]} == {
        "Ready": "False",
        "ContainersReady": "False",
    }
    assert [cs["ready"] for cs in status["containerStatuses"]] == [False, False]
    assert [cs["restartCount"] for cs in status["containerStatuses"]] == [0, 3]
    assert all("running" in cs["state"] for cs in status["containerStatuses"])
    assert pod["status"]["containerStatuses"][0]["ready"] is True  # input not mutated
    assert not pod_ready({"status": {**pod["status"], **status}})


def test_unready_status_needs_container_statuses() -> None:
    with pytest.raises(ValueError, match="no container statuses"):
        unready_status(held_pod())


def pod_running() -> dict:
    p = pod()
    for cs in p["status"]["containerStatuses"]:
        cs["ready"] = True
    p["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    return p
