"""Pure planning: no I/O, no kopf, no Kubernetes client."""
