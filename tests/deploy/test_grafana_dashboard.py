"""deploy/grafana/peakgate.json: a Grafana dashboard (panels with PromQL targets on a `$datasource` template
variable) whose every metric name is one a real gateway exports.

The names come from the /metrics of two real gateways on echo engines: the embedded one (started, after one
translation) and a scale-out one (`[queue] backend = "redis"`, built but not started: it registers the queue's
metrics at construction and needs no Redis until then). The `peakgate_gpu_*` and `peakgate_slo_*` names are
skipped when the gateways export none of them (no GPU on this machine; code from before the SLO gauges).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry, generate_latest

from peakgate.api.app import create_app
from peakgate.api.dashboard_figures import OPERATIONAL
from peakgate.backends.echo_backend import EchoBackend
from peakgate.config import Settings
from peakgate.scaleout.cluster import Counts
from peakgate.scaleout.worker_metrics import WorkerCollector, WorkerState
from peakgate.service import Service

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "peakgate.json"
MODEL = {"name": "echo-en-es", "engine": "echo", "source": "en", "target": "es"}
METRIC = re.compile(r"\b(peakgate_[a-z0-9_]+)\b")
# Exported by collectors that may export nothing here: no GPU (NVML) on this machine; no SLO gauges in this code.
OPTIONAL_FAMILIES = ("peakgate_gpu_", "peakgate_slo_")
RANGE_FUNCTIONS = re.compile(r"\b(rate|increase|irate)\(([^()\[]*)\[")
Json = dict[str, Any]


@pytest.fixture(scope="module")
def dashboard() -> Json:
    loaded: Json = json.loads(DASHBOARD.read_text())
    return loaded


def panels(dashboard: Json) -> list[Json]:
    return [panel for panel in dashboard["panels"] if panel["type"] != "row"]


def exprs(dashboard: Json) -> list[str]:
    return [target["expr"] for panel in panels(dashboard) for target in panel["targets"]]


def test_it_has_grafanas_dashboard_shape(dashboard: Json) -> None:
    assert dashboard["title"] and dashboard["uid"] and isinstance(dashboard["schemaVersion"], int)
    variables = {variable["name"]: variable for variable in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in panels(dashboard):
        assert panel["title"] and panel["type"] in {"stat", "timeseries", "state-timeline"}, panel["title"]
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        grid = panel["gridPos"]
        assert grid["w"] > 0 and grid["h"] > 0 and grid["x"] >= 0 and grid["x"] + grid["w"] <= 24, panel["title"]
        assert panel["targets"] and all(t["expr"].strip() and t["refId"] for t in panel["targets"]), panel["title"]


def test_it_shows_what_an_operator_needs_at_a_glance(dashboard: Json) -> None:
    used = "\n".join(exprs(dashboard))
    for figure in ("histogram_quantile(0.5,", "histogram_quantile(0.95,", "histogram_quantile(0.99,",
                   "peakgate_requests_total", "peakgate_queue_length", 'origin="cache"', 'origin=~"tm_.*"',
                   "peakgate_model_busy_seconds_total", "peakgate_degradation_level", "peakgate_breaker_state",
                   "peakgate_slo_error_budget_remaining", "peakgate_slo_burn_rate", "peakgate_queue_workers_ready"):
        assert figure in used, figure


def test_every_range_is_grafanas_rate_interval_and_traffic_leaves_out_the_dashboards_endpoints(
        dashboard: Json) -> None:
    for expr in exprs(dashboard):
        assert "[" not in expr or set(re.findall(r"\[([^\]]*)\]", expr)) == {"$__rate_interval"}, expr
        for _function, selector in RANGE_FUNCTIONS.findall(expr):
            if selector.startswith("peakgate_requests_total"):
                (excluded,) = re.findall(r'endpoint!~"([^"]*)"', selector)
                assert set(excluded.split("|")) == OPERATIONAL  # the same figures as /dashboard's


def test_every_expr_is_promql_that_promtool_accepts(dashboard: Json, tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool not found (Debian's prometheus package has it; scripts/dev-setup installs it)")
    # Grafana's variables as Prometheus would receive them; each expr as a recording rule, which promtool parses.
    rules = [{"record": f"grafana:expr_{i}", "expr": expr.replace("$__rate_interval", "1m").replace("$job", ".+")}
             for i, expr in enumerate(exprs(dashboard))]
    path = tmp_path / "grafana.rules.yml"
    path.write_text(json.dumps({"groups": [{"name": "grafana", "rules": rules}]}))  # JSON is YAML
    done = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr


async def exposed_names() -> set[str]:
    """Every sample name the /metrics of an embedded and a scale-out gateway, or of a worker, can carry."""
    names: set[str] = set()
    for queue in ("inprocess", "redis"):
        settings = Settings.model_validate({"models": [MODEL], "queue": {"backend": queue}})
        service = Service(settings, backends={"echo-en-es": EchoBackend("echo-en-es", [("en", "es")])})
        transport = httpx.ASGITransport(app=create_app(service))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
            if queue == "inprocess":
                await service.start()
                body = {"segments": ["Save"], "source": "en", "target": "es"}
                assert (await http.post("/v1/translate", json=body)).status_code == 200
            names |= _names((await http.get("/metrics")).text)
        await service.close()
    worker = CollectorRegistry()  # a worker's own: the scheduler's figures (as above) and these
    worker.register(WorkerCollector("w", lambda: WorkerState(counts=Counts(), ready=True, standby=False,
                                                             held_segments=0)))
    return names | _names(generate_latest(worker).decode())


def _names(exposition: str) -> set[str]:
    names = set()
    for line in exposition.splitlines():
        if line.startswith("# TYPE "):
            _hash, _type, name, kind = line.split()
            names |= {name, *(f"{name}{suffix}" for suffix in ("_bucket", "_sum", "_count") if kind == "histogram")}
        elif line and not line.startswith("#"):
            names.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return names


async def test_every_metric_name_is_one_a_real_gateway_exports(dashboard: Json) -> None:
    exposed = await exposed_names()
    used = {name for expr in exprs(dashboard) for name in METRIC.findall(expr)}
    for variable in dashboard["templating"]["list"]:
        used |= set(METRIC.findall(variable.get("definition", "")))
    missing = used - exposed
    for family in OPTIONAL_FAMILIES:
        if not any(name.startswith(family) for name in exposed):
            missing = {name for name in missing if not name.startswith(family)}
    assert not missing
    assert "peakgate_request_latency_seconds_bucket" in used & exposed
