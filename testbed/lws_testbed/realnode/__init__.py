"""Real kubelet nodes for the local cluster: containerd, runc, CNI, kube-proxy and CoreDNS on
this machine, joined to the local control plane next to kwok's simulated nodes.

``node`` runs one (``LocalCluster`` with ``ClusterConfig(real_nodes=1)`` owns it), ``host``
saves and restores the host state it changes, ``guard`` keeps it to one per machine, ``images``
builds the images it runs without a registry, ``preflight`` says whether this machine can run
one at all.
"""

from __future__ import annotations

from typing import Any

# How tests and manifests ask for the real node; simulated pods never land there (the taint)
# and real-container pods never land on kwok's nodes (the selector).
NODE_LABEL = "lws-testbed/real-node"
NODE_TAINT = {"key": NODE_LABEL, "value": "true", "effect": "NoSchedule"}
NODE_NAME = "real-node-0"
POD_CIDR = "10.244.0.0/24"
# The host's address on the node's bridge (cni0): the API server, the kubelet and CoreDNS
# listen there and nowhere else.
HOST_IP = "10.244.0.1"
SERVICE_CIDR = "10.96.0.0/16"
# The pod and node addresses kwok makes up: routed to the bridge too, so that nothing sent to
# them (or to a Service in front of them) ever leaves through the default route.
KWOK_CIDR = "10.0.0.0/16"
KUBERNETES_SERVICE_IP = "10.96.0.1"
DNS_SERVICE_IP = "10.96.0.10"
CLUSTER_DOMAIN = "cluster.local"


def pin_to_real_node(pod_spec: dict[str, Any]) -> dict[str, Any]:
    """``pod_spec`` with the node selector and toleration that put it on the real node."""
    tolerations = list(pod_spec.get("tolerations") or [])
    selector = dict(pod_spec.get("nodeSelector") or {})
    return {
        **pod_spec,
        "nodeSelector": {**selector, NODE_LABEL: "true"},
        "tolerations": [*tolerations, {**NODE_TAINT, "operator": "Equal"}],
    }
