"""Thin async access to the Kubernetes API: objects in and out as plain dicts."""
