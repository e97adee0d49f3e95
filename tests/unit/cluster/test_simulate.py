import pytest

from lws_operator.cluster.simulate import failed_status, restarted_status


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
