"""The operator process: kopf wiring, the reconcile loop, the pod webhook server."""
