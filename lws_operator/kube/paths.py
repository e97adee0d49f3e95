"""REST paths of Kubernetes resources: the one place that knows how a URL is formed."""

from __future__ import annotations

from urllib.parse import quote


def resource_path(
    api_version: str,
    plural: str,
    *,
    namespace: str | None = None,
    name: str | None = None,
    subresource: str | None = None,
) -> str:
    """Path of a collection or an object, e.g. ``resource_path("apps/v1", "statefulsets",
    namespace="ns", name="x", subresource="status")``. ``api_version`` "v1" is the core group."""
    base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    parts = [base]
    if namespace is not None:
        parts.append(f"namespaces/{quote(namespace, safe='')}")
    parts.append(plural)
    if name is not None:
        parts.append(quote(name, safe=""))
        if subresource is not None:
            parts.append(subresource)
    elif subresource is not None:
        raise ValueError("a subresource needs an object name")
    return "/".join(parts)
