from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from lws_testbed.nodes import (
    GPU_RESOURCE,
    KWOK_ANNOTATION,
    RACK_LABEL,
    ZONE_LABEL,
    NodeShape,
    fake_nodes,
    node_topology,
)


def test_default_shape_is_eight_gpu_nodes_in_two_zones_and_four_racks() -> None:
    nodes = fake_nodes(NodeShape())
    assert len(nodes) == 8
    racks = Counter(n["metadata"]["labels"][RACK_LABEL] for n in nodes)
    zones = Counter(n["metadata"]["labels"][ZONE_LABEL] for n in nodes)
    assert racks == {"rack-0": 2, "rack-1": 2, "rack-2": 2, "rack-3": 2}
    assert zones == {"zone-a": 4, "zone-b": 4}
    for n in nodes:
        assert n["status"]["capacity"][GPU_RESOURCE] == "8"
        assert n["status"]["allocatable"] == n["status"]["capacity"]
        assert n["metadata"]["annotations"][KWOK_ANNOTATION] == "fake"
        assert "taints" not in n.get("spec", {})


def test_cpu_only_nodes_have_no_gpu_resource_or_labels() -> None:
    (node,) = fake_nodes(NodeShape(count=1, gpus=0))
    assert GPU_RESOURCE not in node["status"]["capacity"]
    assert "nvidia.com/gpu.product" not in node["metadata"]["labels"]


@given(count=st.integers(0, 64), zones=st.integers(1, 4), racks_per_zone=st.integers(1, 4))
def test_racks_nest_in_zones_and_fill_in_order(count: int, zones: int, racks_per_zone: int) -> None:
    shape = NodeShape(count=count, zones=zones, racks_per_zone=racks_per_zone)
    seen: dict[str, str] = {}
    previous = -1
    for i in range(count):
        zone, rack = node_topology(shape, i)
        assert seen.setdefault(rack, zone) == zone  # a rack belongs to exactly one zone
        rack_no = int(rack.split("-")[1])
        assert 0 <= rack_no < zones * racks_per_zone
        assert rack_no >= previous  # nodes fill racks in order
        previous = rack_no
    names = [n["metadata"]["name"] for n in fake_nodes(shape)]
    assert len(set(names)) == count
