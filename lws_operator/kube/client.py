"""An async Kubernetes client that speaks plain dicts.

Built on kubernetes_asyncio's ApiClient for configuration, TLS and authentication, but without
its generated models: those are strict and reject objects other actors legitimately write (for
example a container status without ``imageID``, which kwok writes). Everything here reads and
writes JSON dicts, so the operator never crashes on an object it did not expect.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import aiohttp
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config

from lws_operator.api import constants as c

JsonObj = dict[str, Any]

FIELD_MANAGER = c.FIELD_MANAGER

_CONTENT_TYPES = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}


class ApiError(Exception):
    """A non-2xx answer of the API server, with the server's own message."""

    def __init__(self, status: int, reason: str, message: str, body: JsonObj | None) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body or {}

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def conflict(self) -> bool:
        """A write lost to another writer (409 Conflict), retried with fresh state."""
        return self.status == 409 and self.reason != "AlreadyExists"

    @property
    def already_exists(self) -> bool:
        return self.status == 409 and self.reason == "AlreadyExists"

    @property
    def gone(self) -> bool:
        return self.status == 410


class Kube:
    """One connection pool to one API server. Create with :meth:`connect`, close with
    :meth:`close` (or use as an async context manager)."""

    def __init__(self, api_client: k8s_client.ApiClient) -> None:
        self._api = api_client

    @classmethod
    async def connect(
        cls, kubeconfig: str | Path | None = None, *, user_agent: str = "lws-operator"
    ) -> Kube:
        """Connect with a kubeconfig file, or in-cluster credentials when none is given and
        the process runs in a pod, or the default kubeconfig otherwise."""
        cfg = k8s_client.Configuration()
        if kubeconfig is not None:
            await k8s_config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
        else:
            try:
                k8s_config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
            except k8s_config.ConfigException:
                await k8s_config.load_kube_config(client_configuration=cfg)
        api = k8s_client.ApiClient(cfg)
        api.user_agent = user_agent
        return cls(api)

    @property
    def host(self) -> str:
        return str(self._api.configuration.host)

    async def close(self) -> None:
        await self._api.close()

    async def __aenter__(self) -> Kube:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _send(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str | int | bool] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        accept: str = "application/json",
        request_timeout: Any = None,
    ) -> aiohttp.ClientResponse:
        params = [(k, _query_value(v)) for k, v in (query or {}).items()]
        headers = {"Content-Type": content_type, "Accept": accept}
        resp: aiohttp.ClientResponse = await self._api.call_api(
            path,
            method,
            query_params=params,
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
            _preload_content=False,
            _request_timeout=request_timeout,
        )
        if not 200 <= resp.status <= 299:
            raw = await resp.read()
            resp.release()
            raise _api_error(resp.status, resp.reason or "", raw)
        return resp

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str | int | bool] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        accept: str = "application/json",
        request_timeout: float | None = 60,
    ) -> JsonObj:
        """One request; ``accept`` may ask for another representation (e.g. a Table)."""
        resp = await self._send(
            method,
            path,
            query=query,
            body=body,
            content_type=content_type,
            accept=accept,
            request_timeout=request_timeout,
        )
        try:
            raw = await resp.read()
        finally:
            resp.release()
        if not raw:
            return {}
        data = json.loads(raw)
        return data if isinstance(data, dict) else {"items": data}

    async def get(self, path: str) -> JsonObj:
        return await self.request("GET", path)

    async def get_or_none(self, path: str) -> JsonObj | None:
        try:
            return await self.get(path)
        except ApiError as e:
            if e.not_found:
                return None
            raise

    async def list(
        self, path: str, *, label_selector: str | None = None, field_selector: str | None = None
    ) -> JsonObj:
        query: dict[str, str | int | bool] = {}
        if label_selector:
            query["labelSelector"] = label_selector
        if field_selector:
            query["fieldSelector"] = field_selector
        return await self.request("GET", path, query=query)

    async def create(self, path: str, body: JsonObj, *, dry_run: bool = False) -> JsonObj:
        query: dict[str, str | int | bool] = {"dryRun": "All"} if dry_run else {}
        return await self.request("POST", path, body=body, query=query)

    async def replace(self, path: str, body: JsonObj) -> JsonObj:
        return await self.request("PUT", path, body=body)

    async def patch(self, path: str, body: Any, *, kind: str = "merge") -> JsonObj:
        """Patch with ``kind`` one of merge, json, strategic."""
        return await self.request("PATCH", path, body=body, content_type=_CONTENT_TYPES[kind])

    async def apply(
        self, path: str, body: JsonObj, *, field_manager: str = FIELD_MANAGER, force: bool = True
    ) -> JsonObj:
        """Server-side apply of ``body`` to the object at ``path``."""
        query: dict[str, str | int | bool] = {"fieldManager": field_manager, "force": force}
        return await self.request(
            "PATCH", path, body=body, query=query, content_type=_CONTENT_TYPES["apply"]
        )

    async def delete(
        self,
        path: str,
        *,
        propagation: str | None = None,
        preconditions: JsonObj | None = None,
        grace_period_seconds: int | None = None,
    ) -> JsonObj | None:
        """Delete; returns None when the object was already gone."""
        body: JsonObj = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation:
            body["propagationPolicy"] = propagation
        if preconditions:
            body["preconditions"] = preconditions
        if grace_period_seconds is not None:
            body["gracePeriodSeconds"] = grace_period_seconds
        try:
            return await self.request("DELETE", path, body=body)
        except ApiError as e:
            if e.not_found:
                return None
            raise

    async def watch(
        self,
        path: str,
        *,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int = 300,
    ) -> AsyncIterator[tuple[str, JsonObj]]:
        """Yield ``(type, object)`` for each event of one watch request. Ends when the server
        closes the watch; raises ApiError(410) when ``resource_version`` is too old."""
        query: dict[str, str | int | bool] = {
            "watch": "true",
            "allowWatchBookmarks": "true",
            "timeoutSeconds": timeout_seconds,
        }
        if resource_version:
            query["resourceVersion"] = resource_version
        if label_selector:
            query["labelSelector"] = label_selector
        if field_selector:
            query["fieldSelector"] = field_selector
        resp = await self._send(
            "GET",
            path,
            query=query,
            request_timeout=aiohttp.ClientTimeout(total=None, sock_read=timeout_seconds + 30),
        )
        try:
            async for line in resp.content:
                if not line.strip():
                    continue
                event = json.loads(line)
                obj = event.get("object") or {}
                if event.get("type") == "ERROR":
                    raise _api_error(int(obj.get("code", 500)), obj.get("reason", ""), line)
                yield str(event.get("type")), obj
        finally:
            resp.release()


def _query_value(v: str | int | bool) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _api_error(status: int, reason: str, raw: bytes) -> ApiError:
    body: JsonObj | None = None
    message = raw.decode("utf-8", "replace")
    try:
        parsed = json.loads(raw)
        if isinstance(parsed, dict):
            body = parsed
            message = str(parsed.get("message", message))
            reason = str(parsed.get("reason", reason))
    except ValueError:
        pass
    return ApiError(status, reason, message, body)
