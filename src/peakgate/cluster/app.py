"""`peakgate route`: the router's own endpoints, the proxy for everything else, start-up and shutdown.

The router answers `GET /healthz` (alive), `/readyz` (200 while some cluster is healthy, else 503 with
Retry-After) and `/metrics` (its own registry); every other request, these paths with other methods included,
goes through to a gateway.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import httpx
import msgspec
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.responses import Response
from starlette.routing import Router
from starlette.types import ASGIApp, Receive, Scope, Send

from peakgate.api.errors import JSON, retry_after
from peakgate.clock import Clock, MonotonicClock
from peakgate.cluster.config import ClusterConfig
from peakgate.cluster.health import HealthChecker, HttpProber, Hysteresis, Prober
from peakgate.cluster.metrics import RouterMetrics
from peakgate.cluster.proxy import Proxy
from peakgate.cluster.router import ClusterRouter
from peakgate.cluster.selector import Selector
from peakgate.config import load_settings
from peakgate.errors import ConfigError


class RouterApp:
    """Everything `peakgate route` runs, built from the config; `start` before serving, `close` after."""

    def __init__(self, config: ClusterConfig, *, clock: Clock | None = None,
                 transport: httpx.AsyncBaseTransport | None = None, prober: Prober | None = None) -> None:
        self.config = config
        self.metrics = RouterMetrics()
        urls = [u.url for spec in config.clusters for u in spec.upstreams]
        timeout = httpx.Timeout(config.upstream_timeout_s, connect=config.connect_timeout_s)
        # Pooled keep-alive connections for as many requests as the gateways take at full load; the health
        # probes get their own small pool so a busy proxy never delays them.
        keepalive = sum(u.max_inflight for spec in config.clusters for u in spec.upstreams)
        self._client = httpx.AsyncClient(transport=transport, timeout=timeout, follow_redirects=False,
                                         limits=httpx.Limits(max_connections=None,
                                                             max_keepalive_connections=keepalive))
        self._probe_client = httpx.AsyncClient(transport=transport, limits=httpx.Limits(max_connections=2 * len(urls)))
        self.health = HealthChecker(
            urls, prober or HttpProber(self._probe_client, config.health_timeout_s),
            clock or MonotonicClock(), Hysteresis(config.failures_before_down, config.successes_before_up),
            config.health_interval_s)
        self.router = ClusterRouter(config, self.health, self.metrics)
        self._proxy = Proxy(self.router, Selector(config), self._client)
        self._own: dict[str, Callable[[], Response]] = {
            "/healthz": lambda: _status(200, "ok"), "/readyz": self._readyz, "/metrics": self._metrics}
        self._checks: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """One round of health checks (so the first requests route on facts), then checks every interval."""
        await self.health.check_all()
        self._checks = asyncio.create_task(self.health.run())

    async def close(self) -> None:
        if self._checks is not None:
            self._checks.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._checks
        await self._client.aclose()
        await self._probe_client.aclose()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        own = self._own.get(scope["path"]) if scope["type"] == "http" and scope["method"] in ("GET", "HEAD") else None
        if own is not None:
            await own()(scope, receive, send)
        else:
            await self._proxy(scope, receive, send)

    def asgi(self) -> ASGIApp:
        """The app with a lifespan that starts and closes this router (what uvicorn serves)."""

        @contextlib.asynccontextmanager
        async def lifespan(_app: object) -> AsyncIterator[None]:
            await self.start()
            try:
                yield
            finally:
                await self.close()

        return Router(default=self, lifespan=lifespan)

    def _readyz(self) -> Response:
        if self.router.ready():
            return _status(200, "ready")
        response = _status(503, "no healthy cluster")
        response.headers["Retry-After"] = retry_after(self.config.health_interval_s)
        return response

    def _metrics(self) -> Response:
        self.router.publish()
        return Response(self.metrics.render(), media_type=CONTENT_TYPE_LATEST)


def _status(code: int, status: str) -> Response:
    return Response(msgspec.json.encode({"status": status}), status_code=code, media_type=JSON)


def run_router(config_path: Path | None, host: str | None, port: int | None) -> int:
    """`peakgate route`: serve until interrupted."""
    import uvicorn

    settings = load_settings(config_path)
    config = settings.cluster
    if config is None:
        raise ConfigError("peakgate route needs a [cluster] section in the config (see README: Cluster routing)")
    app = RouterApp(config)
    # The gateways' answers carry their own Date and Server headers.
    uvicorn.run(app.asgi(), host=host or config.host, port=port or config.port, loop="uvloop", http="httptools",
                log_level=settings.log_level, lifespan="on", access_log=settings.access_log, server_header=False,
                date_header=False, timeout_graceful_shutdown=max(1, int(settings.shutdown_grace_s)))
    return 0
