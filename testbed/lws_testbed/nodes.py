"""The simulated GPU nodes of the local cluster (pure: shapes in, Node objects out).

kwok manages every Node annotated ``kwok.x-k8s.io/node: fake``; the Node's status is accepted on
create, and kwok's node-initialize stage keeps the capacity given here. The nodes carry no taint,
so ordinary manifests (the seed's vLLM example) schedule on them unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ZONE_LABEL = "topology.kubernetes.io/zone"
RACK_LABEL = "topology.kubernetes.io/rack"
GPU_RESOURCE = "nvidia.com/gpu"
KWOK_ANNOTATION = "kwok.x-k8s.io/node"


@dataclass(frozen=True)
class NodeShape:
    """How many fake nodes to make and what each one offers.

    Nodes are spread over ``zones`` zones, each with ``racks_per_zone`` racks, in order:
    node i sits in rack ``i // nodes_per_rack``; racks fill zone by zone."""

    count: int = 8
    gpus: int = 8
    cpu: str = "64"
    memory: str = "512Gi"
    pods: int = 250
    zones: int = 2
    racks_per_zone: int = 2
    name_prefix: str = "gpu-node"
    gpu_product: str = "NVIDIA-H100-80GB-HBM3"
    extra_labels: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.count < 0:
            raise ValueError("node count must be >= 0")
        if self.zones < 1 or self.racks_per_zone < 1:
            raise ValueError("zones and racks_per_zone must be >= 1")


def node_topology(shape: NodeShape, index: int) -> tuple[str, str]:
    """(zone, rack) of node ``index``: nodes are split evenly over all racks, in order."""
    racks = shape.zones * shape.racks_per_zone
    per_rack = max(1, -(-shape.count // racks))
    rack = min(index // per_rack, racks - 1)
    zone = rack // shape.racks_per_zone
    return f"zone-{chr(ord('a') + zone)}", f"rack-{rack}"


def fake_nodes(shape: NodeShape) -> list[dict[str, Any]]:
    nodes = []
    resources = {"cpu": shape.cpu, "memory": shape.memory, "pods": str(shape.pods)}
    if shape.gpus:
        resources[GPU_RESOURCE] = str(shape.gpus)
    for i in range(shape.count):
        name = f"{shape.name_prefix}-{i}"
        zone, rack = node_topology(shape, i)
        labels = {
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "type": "kwok",
            ZONE_LABEL: zone,
            RACK_LABEL: rack,
            **shape.extra_labels,
        }
        if shape.gpus:
            labels["nvidia.com/gpu.product"] = shape.gpu_product
            labels["nvidia.com/gpu.count"] = str(shape.gpus)
        nodes.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "labels": labels,
                    "annotations": {KWOK_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
                },
                "status": {"capacity": dict(resources), "allocatable": dict(resources)},
            }
        )
    return nodes
