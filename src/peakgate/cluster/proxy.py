"""The reverse proxy: a request streamed to the gateway its route picked, the answer streamed back.

Method, path (as sent, percent-encoding included), query, headers (Authorization too) and body go through
unchanged, but for the hop-by-hop headers (RFC 9110 §7.6.1: Connection and those it names, Keep-Alive, TE,
Trailer, Transfer-Encoding, Upgrade, Proxy-*) and Host (the gateway's own); `X-Forwarded-For` gains the client.
The answer keeps its status and headers (hop-by-hop dropped) and gains `X-Peakgate-Cluster: <name>` and, when
its preferred cluster did not serve it, `X-Peakgate-Spilled: <preferred>`.

A connection that cannot be opened is tried once more on a fresh decision that counts that gateway as down
(the body is still unread then; the refusal also counts as one failed health check). Any other
failure before the answer is a 502; once the answer has begun, the connection is cut (the client sees a
truncated answer, never a wrong one). WebSockets are not proxied.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable

import httpx
from starlette.types import Receive, Scope, Send

from peakgate.api.errors import NATIVE, error_response
from peakgate.cluster.policy import NoRoute, Route
from peakgate.cluster.router import ClusterRouter, Lease
from peakgate.cluster.selector import Selector, tenant_of
from peakgate.errors import BackendError, PeakgateError, Unavailable

_HOP_BY_HOP = frozenset({b"connection", b"keep-alive", b"proxy-authenticate", b"proxy-authorization",
                         b"proxy-connection", b"te", b"trailer", b"transfer-encoding", b"upgrade"})
_POLICY_VIOLATION = 1008  # WebSocket close code


class NoHealthyCluster(Unavailable):
    code = "no_healthy_cluster"


class UpstreamFailed(BackendError):
    code = "upstream_failed"


class UpstreamUnreachable(UpstreamFailed):
    """No connection could be opened to `url`: nothing was sent, so the request may go elsewhere."""

    def __init__(self, message: str, url: str) -> None:
        super().__init__(message)
        self.url = url


class _Body:
    """The client's body as an async iterable httpx streams upstream; `started` once httpx began reading it."""

    def __init__(self, receive: Receive) -> None:
        self._receive = receive
        self.started = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        self.started = True
        while True:
            message = await self._receive()
            if message["type"] == "http.disconnect":
                return  # the client left: the gateway sees a short body and the answer goes nowhere
            yield message.get("body", b"")
            if not message.get("more_body", False):
                return


class Proxy:
    """The ASGI app for every path the router does not answer itself."""

    def __init__(self, router: ClusterRouter, selector: Selector, client: httpx.AsyncClient) -> None:
        self._router = router
        self._selector = selector
        self._client = client

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await send({"type": "websocket.close", "code": _POLICY_VIOLATION})
            return
        headers: list[tuple[bytes, bytes]] = scope["headers"]
        preferred = self._selector.prefer(headers, _client_host(scope)).cluster
        tenant = tenant_of(headers, scope["query_string"])
        body = _Body(receive) if _has_body(headers) else None
        try:
            lease, upstream = await self._open(scope, preferred, tenant, body)
        except PeakgateError as exc:
            await error_response(NATIVE, exc)(scope, receive, send)
            return
        outcome = "upstream_error"
        try:
            await _relay(upstream, lease.route, send)
            outcome = f"{upstream.status_code // 100}xx"
        finally:
            await upstream.aclose()
            self._router.release(lease, outcome)

    async def _open(self, scope: Scope, preferred: str, tenant: str | None,
                    body: _Body | None) -> tuple[Lease, httpx.Response]:
        try:
            return await self._send_once(scope, preferred, tenant, body, None)
        except UpstreamUnreachable as exc:
            if body is not None and body.started:
                raise
            return await self._send_once(scope, preferred, tenant, body, exc.url)

    async def _send_once(self, scope: Scope, preferred: str, tenant: str | None, body: _Body | None,
                         avoid: str | None) -> tuple[Lease, httpx.Response]:
        lease = self._router.take(preferred, tenant, avoid)
        if isinstance(lease, NoRoute):
            raise NoHealthyCluster(lease.reason, retry_after_s=lease.retry_after_s)
        request = self._client.build_request(scope["method"], _target(lease.url, scope),
                                             headers=_forward_headers(scope), content=body)
        try:
            return lease, await self._client.send(request, stream=True)
        except BaseException as exc:  # cancellation included: the lease must go back whatever ended the try
            self._router.release(lease, "upstream_error")
            where = f"cluster {lease.route.cluster}, gateway {lease.url}"
            if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
                self._router.unreachable(lease.url)
                raise UpstreamUnreachable(f"{where}: cannot connect: {exc}", lease.url) from exc
            if isinstance(exc, httpx.HTTPError):
                raise UpstreamFailed(f"{where}: failed: {exc!r}") from exc
            raise


async def _relay(upstream: httpx.Response, route: Route, send: Send) -> None:
    headers = _end_to_end(upstream.headers.raw)
    headers.append((b"x-peakgate-cluster", route.cluster.encode()))
    if route.spilled_from is not None:
        headers.append((b"x-peakgate-spilled", route.spilled_from.encode()))
    await send({"type": "http.response.start", "status": upstream.status_code, "headers": headers})
    try:
        async for chunk in upstream.aiter_raw():
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
    except httpx.HTTPError as exc:
        raise UpstreamFailed(f"gateway answer broke off: {exc!r}") from exc
    await send({"type": "http.response.body", "body": b"", "more_body": False})


def _end_to_end(headers: Iterable[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """The headers without the hop-by-hop ones (those a Connection header names included)."""
    pairs = list(headers)
    named = {token.strip().lower() for name, value in pairs if name.lower() == b"connection"
             for token in value.split(b",")}
    return [(name, value) for name, value in pairs if name.lower() not in _HOP_BY_HOP | named]


def _forward_headers(scope: Scope) -> list[tuple[bytes, bytes]]:
    headers = [(name, value) for name, value in _end_to_end(scope["headers"]) if name.lower() != b"host"]
    host = _client_host(scope)
    if host is not None:
        headers.append((b"x-forwarded-for", host.encode()))
    return headers


def _target(base_url: str, scope: Scope) -> httpx.URL:
    base = httpx.URL(base_url)
    path: bytes = scope.get("raw_path") or scope["path"].encode()
    query: bytes = scope["query_string"]
    return base.copy_with(raw_path=base.raw_path.rstrip(b"/") + path + (b"?" + query if query else b""))


def _has_body(headers: Iterable[tuple[bytes, bytes]]) -> bool:
    for name, value in headers:
        lowered = name.lower()
        if lowered == b"transfer-encoding" or (lowered == b"content-length" and value.strip() != b"0"):
            return True
    return False


def _client_host(scope: Scope) -> str | None:
    client = scope.get("client")
    return str(client[0]) if client else None
