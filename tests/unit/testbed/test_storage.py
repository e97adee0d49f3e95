"""Volumes for claims on the local cluster (testbed/lws_testbed/storage.py)."""

from __future__ import annotations

from lws_testbed.storage import NO_PROVISIONER, storage_class, volumes


def test_storage_class_binds_at_first_consumer_without_a_provisioner() -> None:
    sc = storage_class("local")
    assert sc["provisioner"] == NO_PROVISIONER
    assert sc["volumeBindingMode"] == "WaitForFirstConsumer"
    assert storage_class("x", wait_for_first_consumer=False)["volumeBindingMode"] == "Immediate"


def test_volumes() -> None:
    pvs = volumes("pool", 3, "local", capacity="5Gi")
    assert [pv["metadata"]["name"] for pv in pvs] == ["pool-0", "pool-1", "pool-2"]
    spec = pvs[0]["spec"]
    assert spec["storageClassName"] == "local" and spec["capacity"] == {"storage": "5Gi"}
    assert spec["persistentVolumeReclaimPolicy"] == "Retain" and "nodeAffinity" not in spec
    assert len({pv["spec"]["hostPath"]["path"] for pv in pvs}) == 3
