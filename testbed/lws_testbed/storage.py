"""Volumes for claims on the local cluster (pure: names in, objects out).

No volume provisioner runs, so claims bind only to PersistentVolumes made beforehand. The
kube-controller-manager runs the PersistentVolume binder and the PV/PVC protection controllers,
and the scheduler's VolumeBinding plugin binds claims of a ``WaitForFirstConsumer`` class when
it places their pod. The volumes here are ``hostPath`` volumes without node affinity, so they
fit every simulated node (kwok mounts nothing), with reclaim policy ``Retain``: a claim's
deletion leaves its volume ``Released``, and whoever made the volumes deletes them.
"""

from __future__ import annotations

from typing import Any

NO_PROVISIONER = "kubernetes.io/no-provisioner"


def storage_class(name: str, *, wait_for_first_consumer: bool = True) -> dict[str, Any]:
    """A StorageClass without a provisioner: claims of it bind only to existing volumes."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": NO_PROVISIONER,
        "volumeBindingMode": "WaitForFirstConsumer" if wait_for_first_consumer else "Immediate",
    }


def volumes(
    prefix: str,
    count: int,
    storage_class_name: str,
    *,
    capacity: str = "10Gi",
    access_modes: tuple[str, ...] = ("ReadWriteOnce",),
) -> list[dict[str, Any]]:
    """``count`` PersistentVolumes ``<prefix>-<i>`` of ``storage_class_name``."""
    return [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": f"{prefix}-{i}", "labels": {"lws-operator.local/pool": prefix}},
            "spec": {
                "capacity": {"storage": capacity},
                "accessModes": list(access_modes),
                "storageClassName": storage_class_name,
                "persistentVolumeReclaimPolicy": "Retain",
                "volumeMode": "Filesystem",
                "hostPath": {"path": f"/tmp/lws-operator/{prefix}-{i}", "type": ""},
            },
        }
        for i in range(count)
    ]
