"""GET /dashboard (a self-contained live page) and GET /dashboard/data (its figures, as JSON).

The figures come from the service's own Prometheus registry, read when a poll finds the last reading a step
old: nothing is computed per translation request, and nothing at all while nobody watches. A ring keeps the
chart points of the last `window_s`. Open like /metrics (operational figures only, no tenant's text): put both
behind the same network policy.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping

import msgspec
from prometheus_client import CollectorRegistry
from starlette.requests import Request
from starlette.responses import Response

from peakgate.api import dashboard_page
from peakgate.api.bodies import json_response
from peakgate.api.contract import TranslationService
from peakgate.api.dashboard_figures import Detail, Point, Reading, figures, read
from peakgate.api.endpoint import Operation
from peakgate.api.errors import NATIVE
from peakgate.clock import Clock, MonotonicClock
from peakgate.scheduling.concurrency import worker_count
from peakgate.scheduling.work_queue import needs_local_engines

HTML = "text/html; charset=utf-8"


class DashboardData(msgspec.Struct):
    now: float  # clock seconds, the clock of the points' `t`: the page plots `now - t` ago
    step_s: float
    window_s: float
    points: list[Point]  # oldest first
    latest: Detail | None  # None until the first point


class Dashboard:
    """The ring of chart points, with a new one whenever a poll finds the last reading `step_s` old."""

    def __init__(self, registry: CollectorRegistry, workers: Mapping[str, int], clock: Clock, *,
                 step_s: float = 2.0, window_s: float = 600.0) -> None:
        self._registry = registry
        self._workers = dict(workers)
        self._clock = clock
        self._step_s = step_s
        self._window_s = window_s
        # The first point counts from here, from zero: the service's counters start at zero when it is built,
        # just before its app. Not reading the registry yet leaves its collectors (NVML's) closed until a poll.
        self._last = Reading(clock.now(), {})
        self._points: deque[Point] = deque(maxlen=math.ceil(window_s / step_s))
        self._latest: Detail | None = None

    def data(self) -> DashboardData:
        now = self._clock.now()
        # The first point may span less than a step: a page just opened should not wait for its second poll.
        # A point after a pause in polling spans the pause (an average over it).
        if now - self._last.t >= self._step_s or (self._latest is None and now > self._last.t):
            reading = read(self._registry.collect(), now)
            point, self._latest = figures(self._last, reading, self._workers)
            self._points.append(point)
            self._last = reading
        while self._points and self._points[0].t < now - self._window_s:
            self._points.popleft()
        return DashboardData(now, self._step_s, self._window_s, list(self._points), self._latest)


def dashboard_operations(service: TranslationService, clock: Clock | None = None) -> list[Operation]:
    # A scale-out gateway without the local fallback runs no engine: no local worker to be busy.
    local = needs_local_engines(service.settings)
    workers = {m.name: worker_count(m) if local else 0 for m in service.settings.models}
    board = Dashboard(service.metrics.registry, workers, clock or MonotonicClock())

    async def page(_request: Request) -> Response:
        return Response(dashboard_page.PAGE, media_type=HTML, headers=dashboard_page.HEADERS)

    async def data(_request: Request) -> Response:
        response = json_response(board.data())
        response.headers["Cache-Control"] = "no-store"
        return response

    return [
        Operation("/dashboard", ("GET",), page, NATIVE, "Live dashboard: traffic, latency, queues, engines, SLOs",
                  produces=(HTML,)),
        Operation("/dashboard/data", ("GET",), data, NATIVE, "The dashboard's figures over its last 10 minutes",
                  response=DashboardData),
    ]
