"""/dashboard and /dashboard/data: the ring of points sampled when polled (FakeClock), the served page (self-
contained: its CSP admits only its own inline script and style), and both documented in the OpenAPI document."""

from __future__ import annotations

import base64
import hashlib
import re

import msgspec
import pytest
from api_fakes import FakeService, client
from starlette.applications import Starlette
from starlette.testclient import TestClient

from peakgate.api.dashboard import Dashboard, DashboardData, dashboard_operations
from peakgate.api.endpoint import to_routes
from peakgate.clock import FakeClock
from peakgate.config import Settings
from peakgate.observe.metrics import Metrics


def translate(metrics: Metrics, count: int) -> None:
    metrics.requests.labels("/v1/translate", "medium", "200").inc(count)


def test_no_point_before_time_passes_then_one_a_step() -> None:
    metrics, clock = Metrics(), FakeClock(100.0)
    board = Dashboard(metrics.registry, {"m": 1}, clock, step_s=2.0)
    assert board.data().points == [] and board.data().latest is None
    translate(metrics, 5)
    clock.advance(0.5)  # the first point may be short: a page just opened shows figures at once
    first = board.data()
    assert [(p.t, p.rps) for p in first.points] == [(100.5, 10.0)] and first.latest is not None
    translate(metrics, 5)
    clock.advance(1.0)
    assert len(board.data().points) == 1  # within a step: the same figures
    clock.advance(1.0)
    assert [(p.t, p.rps) for p in board.data().points] == [(100.5, 10.0), (102.5, 2.5)]


def test_the_ring_keeps_one_window_and_drops_points_older_than_it() -> None:
    metrics, clock = Metrics(), FakeClock()
    board = Dashboard(metrics.registry, {}, clock, step_s=2.0, window_s=10.0)
    for _ in range(20):
        clock.advance(2.0)
        translate(metrics, 4)
        board.data()
    data = board.data()
    assert [p.t for p in data.points] == [32.0, 34.0, 36.0, 38.0, 40.0]
    assert (data.now, data.step_s, data.window_s) == (40.0, 2.0, 10.0)
    clock.advance(60.0)  # nobody watched for a minute: the point after spans the pause
    assert [(p.t, p.rps) for p in board.data().points] == [(100.0, 0.0)]


def served(clock: FakeClock) -> tuple[FakeService, TestClient]:
    service = FakeService()
    app = Starlette(routes=to_routes(dashboard_operations(service, clock), service.metrics))
    return service, TestClient(app)


def test_data_answers_the_figures_as_json_never_cached() -> None:
    clock = FakeClock()
    service, http = served(clock)
    translate(service.metrics, 6)
    clock.advance(3.0)
    reply = http.get("/dashboard/data")
    assert reply.status_code == 200 and reply.headers["cache-control"] == "no-store"
    data = msgspec.json.decode(reply.content, type=DashboardData)
    assert [p.rps for p in data.points] == [2.0]
    assert data.latest is not None and data.latest.by_status == {"2xx": 2.0}


@pytest.mark.parametrize(("queue", "workers"), [
    ({"backend": "inprocess"}, 2), ({"backend": "redis", "fallback": "local"}, 2), ({"backend": "redis"}, 0)])
def test_local_workers_count_only_where_the_gateway_runs_engines(queue: dict[str, str], workers: int) -> None:
    model = {"name": "m", "engine": "apertium", "source": "en", "target": "es", "mode": "eng-spa", "pipelines": 2}
    service = FakeService(settings=Settings.model_validate({"models": [model], "queue": queue}))
    clock = FakeClock()
    http = TestClient(Starlette(routes=to_routes(dashboard_operations(service, clock), service.metrics)))
    clock.advance(1.0)
    data = msgspec.json.decode(http.get("/dashboard/data").content, type=DashboardData)
    assert data.latest is not None and [(m.name, m.workers) for m in data.latest.models] == [("m", workers)]


def sha256(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def test_page_is_self_contained_and_its_policy_admits_only_its_own_script_and_style() -> None:
    reply = served(FakeClock())[1].get("/dashboard")
    assert reply.status_code == 200 and reply.headers["content-type"] == "text/html; charset=utf-8"
    policy = reply.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "connect-src 'self'" in policy
    (script,) = re.findall(r"<script>(.*?)</script>", reply.text, re.DOTALL)
    (style,) = re.findall(r"<style>(.*?)</style>", reply.text, re.DOTALL)
    assert f"script-src 'sha256-{sha256(script)}'" in policy and f"style-src 'sha256-{sha256(style)}'" in policy
    assert not re.search(r"\b(src|href)=|url\(|@import", reply.text)  # nothing loaded from anywhere
    assert 'fetch("dashboard/data"' in script  # relative: it works behind a path prefix too


def test_both_routes_are_documented_like_metrics() -> None:
    paths = client(FakeService()).get("/openapi.json").json()["paths"]
    page = paths["/dashboard"]["get"]
    assert list(page["responses"]["200"]["content"]) == ["text/html; charset=utf-8"] and "security" not in page
    data = paths["/dashboard/data"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert data["$ref"].endswith("/DashboardData")
