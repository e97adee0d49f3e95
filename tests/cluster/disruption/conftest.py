"""The disruption tests use the scheduling tests' node pools (nodes of a test's own)."""

from tests.cluster.scheduling.conftest import node_pool

__all__ = ["node_pool"]
