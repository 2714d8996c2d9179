"""Contract test: the Kubernetes provider, through the official `kubernetes` client, against a local HTTP server
speaking the real `scale` subresource: GET and PATCH `/apis/apps/v1/namespaces/{ns}/deployments/{name}/scale`,
`autoscaling/v1` Scale objects, a `Status` object for errors, and only the patch content types the API server
accepts for it. The fake controller brings `status.replicas` one step towards `spec.replicas` per read."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from redis_harness import free_port

from peakgate.clock import MonotonicClock
from peakgate.control.loop_settings import KubernetesProviderConfig
from peakgate.control.providers.base import ProviderError
from peakgate.control.providers.kubernetes import KubernetesProvider, connect_apps_api

NAMESPACE = "peakgate"
_PATH = re.compile(r"^/apis/apps/v1/namespaces/(?P<ns>[^/]+)/deployments/(?P<name>[^/]+)/scale$")
_PATCH_TYPES = ("application/merge-patch+json", "application/strategic-merge-patch+json")


@dataclass
class Cluster:
    deployments: dict[str, list[int]]  # name -> [spec.replicas, status.replicas]
    patches: list[tuple[str, str, Any]] = field(default_factory=list)  # (name, content type, body)
    failing: int | None = None  # answer every request with this status

    def scale(self, name: str) -> dict[str, Any]:
        spec, status = self.deployments[name]
        return {"kind": "Scale", "apiVersion": "autoscaling/v1",
                "metadata": {"name": name, "namespace": NAMESPACE, "uid": f"uid-{name}", "resourceVersion": "1",
                             "creationTimestamp": "2026-12-01T00:00:00Z"},
                "spec": {"replicas": spec},
                "status": {"replicas": status,
                           "selector": f"app.kubernetes.io/name=peakgate,app.kubernetes.io/component={name}"}}

    def observe(self, name: str) -> None:
        spec, status = self.deployments[name]
        self.deployments[name][1] = status + (spec > status) - (spec < status)


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}


def _handler(cluster: Cluster) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            name = self._deployment()
            if name is not None:
                cluster.observe(name)
                self._send(200, cluster.scale(name))

        def do_PATCH(self) -> None:
            name = self._deployment()
            if name is None:
                return
            kind = self.headers.get("Content-Type", "")
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            cluster.patches.append((name, kind, body))
            if kind not in _PATCH_TYPES:
                self._send(415, _status(415, "UnsupportedMediaType", f"the body of the request was in an unknown "
                                                                      f"format - accepted media types include: "
                                                                      f"{', '.join(_PATCH_TYPES)}"))
                return
            replicas = body.get("spec", {}).get("replicas") if isinstance(body, dict) else None
            if not isinstance(replicas, int) or replicas < 0:
                self._send(422, _status(422, "Invalid", "spec.replicas: Invalid value: must be >= 0"))
                return
            cluster.deployments[name][0] = replicas
            self._send(200, cluster.scale(name))

        def _deployment(self) -> str | None:
            match = _PATH.match(self.path.split("?")[0])
            if cluster.failing is not None:
                self._send(cluster.failing, _status(cluster.failing, "InternalError", "etcd unavailable"))
            elif match is None or "application/json" not in self.headers.get("Accept", ""):
                self._send(404, _status(404, "NotFound", "the server could not find the requested resource"))
            elif match["ns"] != NAMESPACE or match["name"] not in cluster.deployments:
                self._send(404, _status(404, "NotFound", f'deployments.apps "{match["name"]}" not found'))
            else:
                return match["name"]
            return None

        def _send(self, code: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def cluster() -> Iterator[tuple[Cluster, str]]:
    state = Cluster({"peakgate-worker": [1, 1], "peakgate-worker-warm": [1, 1]})
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _provider(url: str, **config: Any) -> KubernetesProvider:
    settings = KubernetesProviderConfig(api_url=url, request_timeout_s=2.0, **config)
    return KubernetesProvider(connect_apps_api(settings), settings, MonotonicClock())


async def test_scaling_patches_the_scale_subresource_and_reads_progress_from_its_status(
        cluster: tuple[Cluster, str]) -> None:
    state, url = cluster
    provider = _provider(url)
    try:
        assert (await provider.current()).serving == 1
        after = await provider.scale_to(3)
        assert state.patches == [("peakgate-worker", "application/strategic-merge-patch+json",
                                  {"spec": {"replicas": 3}})]
        assert (after.serving, after.starting, after.draining, after.warm) == (2, 1, 0, 1)  # one observed so far
        assert [(e.replica, e.kind, e.detail) for e in after.events] == [("peakgate-worker", "requested",
                                                                          "1 -> 3 replicas")]
        assert (await provider.scale_to(3)).serving == 3 and len(state.patches) == 1  # no-op: no PATCH
        down = await provider.scale_to(1)
        assert (down.serving, down.draining) == (1, 1) and down.events[0].kind == "draining"
        await provider.keep_warm(2)
        assert state.patches[-1] == ("peakgate-worker-warm", "application/strategic-merge-patch+json",
                                     {"spec": {"replicas": 2}})
        assert state.deployments["peakgate-worker-warm"][0] == 2
    finally:
        await provider.close()


async def test_api_errors_and_an_unreachable_api_become_provider_errors(cluster: tuple[Cluster, str]) -> None:
    state, url = cluster
    provider = _provider(url, deployment="peakgate-workers")  # a typo: no such Deployment
    try:
        with pytest.raises(ProviderError, match="404"):
            await provider.scale_to(2)
    finally:
        await provider.close()
    provider = _provider(url)
    state.failing = 500
    try:
        with pytest.raises(ProviderError, match="500"):
            await provider.current()
    finally:
        await provider.close()
    provider = _provider(f"http://127.0.0.1:{free_port()}")  # nothing listens there
    try:
        with pytest.raises(ProviderError, match="out of reach"):
            await provider.current()
    finally:
        await provider.close()


async def test_without_a_warm_deployment_the_pool_is_not_kept_and_reads_as_empty(
        cluster: tuple[Cluster, str]) -> None:
    state, url = cluster
    provider = _provider(url, warm_deployment=None)
    try:
        await provider.keep_warm(3)
        assert (await provider.current()).warm == 0 and state.patches == []
    finally:
        await provider.close()
