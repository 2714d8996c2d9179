"""A real Prometheus (Debian's) scrapes a running `peakgate serve`, with the committed rule files loaded: PromQL
finds the requests by status, a p99 through histogram_quantile, the recording rules' series, the SLO gauges and
the process metrics; and a scale-out worker's own /metrics (`--metrics-port`) scraped beside its gateway."""

from __future__ import annotations

import contextlib
import json
import math
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from redis_harness import RedisServer

from bench._http import Server, free_port, metric, scrape, serve, stop_process
from peakgate.observe.rules import ALERTS_FILE, RECORDING_FILE

DEPLOY = Path(__file__).resolve().parents[3] / "deploy" / "prometheus"
MODEL = "echo-en-es"
CONFIG: dict[str, object] = {
    "models": [{"name": MODEL, "engine": "echo", "source": "en", "target": "es"}],
    "tiers": {"medium": [MODEL]}, "default_tier": "medium", "cache": {"enabled": False},
}
Vector = list[dict[str, Any]]


@dataclass
class Prometheus:
    url: str
    proc: subprocess.Popen[bytes]
    log: Path

    def until(self, what: str, holds: Callable[[], bool], seconds: float = 15.0) -> None:
        """Poll until `holds()` (an error reads as not yet); bounded, so the test stops by itself."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"prometheus exited: {self.log.read_text(errors='replace')}"
            with contextlib.suppress(httpx.HTTPError, KeyError, IndexError, ValueError):
                if holds():
                    return
            time.sleep(0.25)
        raise AssertionError(f"{what}: not within {seconds} s; log:\n{self.log.read_text(errors='replace')}")

    def query(self, promql: str) -> Vector:
        reply = httpx.get(f"{self.url}/api/v1/query", params={"query": promql}, timeout=5).json()
        assert reply["status"] == "success", reply
        result: Vector = reply["data"]["result"]
        return result

    def value(self, promql: str) -> float:
        (sample,) = self.query(promql)
        return float(sample["value"][1])


@contextlib.contextmanager
def prometheus(targets: dict[str, str], tmp: Path) -> Iterator[Prometheus]:
    """Prometheus scraping each job's host:port every second, with the committed rules loaded."""
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.skip("prometheus not found (Debian's prometheus package; scripts/dev-setup installs it)")
    config = tmp / "prometheus.yml"
    rule_files = "".join(f"  - {DEPLOY / name}\n" for name in (RECORDING_FILE, ALERTS_FILE))
    jobs = "".join(f"  - job_name: {job}\n    static_configs:\n      - targets: ['{target}']\n"
                   for job, target in targets.items())
    config.write_text(f"global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n{rule_files}"
                      f"scrape_configs:\n{jobs}")
    address = f"127.0.0.1:{free_port()}"
    log = tmp / "prometheus.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen([binary, f"--config.file={config}", f"--storage.tsdb.path={tmp / 'data'}",
                                 f"--web.listen-address={address}", "--log.level=warn"], stdout=sink, stderr=sink)
    prom = Prometheus(f"http://{address}", proc, log)
    try:
        prom.until("ready", lambda: httpx.get(f"{prom.url}/-/ready", timeout=1).status_code == 200, 20)
        yield prom
    finally:
        stop_process(proc, 10)


def _host(server: Server) -> str:
    return server.url.removeprefix("http://")


def _translate(server: Server, count: int) -> None:
    with httpx.Client(base_url=server.url, timeout=10) as client:
        for i in range(count):
            reply = client.post("/v1/translate", json={"segments": [f"Save file {i}."], "source": "en", "target": "es"})
            assert reply.status_code == 200, reply.text


def _statuses(prom: Prometheus, promql: str) -> dict[str, float]:
    return {s["metric"]["status"]: float(s["value"][1]) for s in prom.query(promql)}


def test_prometheus_scrapes_peakgate_and_promql_finds_the_series(tmp_path: Path) -> None:
    with serve(CONFIG) as server, prometheus({"peakgate": _host(server)}, tmp_path) as prom:
        translate = '{endpoint="/v1/translate"}'
        # A request's series appear with it: one scraped before the rest of the traffic gives the rates two points.
        _translate(server, 1)
        prom.until("first scrape", lambda: prom.value(f"sum(peakgate_requests_total{translate})") == 1.0)
        _translate(server, 20)
        bad = httpx.post(f"{server.url}/v1/translate", json={"segments": ["x"], "source": "en", "target": "xx"})
        assert bad.status_code == 400
        p99 = f"histogram_quantile(0.99, sum by (le) (rate(peakgate_request_latency_seconds_bucket{translate}[1m])))"
        checks: dict[str, Callable[[], bool]] = {
            "requests by status": lambda: _statuses(
                prom, f"sum by (status) (peakgate_requests_total{translate})") == {"200": 21.0, "400": 1.0},
            "p99 latency": lambda: math.isfinite(prom.value(p99)),
            "recorded request rate": lambda: prom.value(
                'endpoint_tier_status:peakgate_requests:rate5m{endpoint="/v1/translate",status="200"}') > 0,
            "recorded SLO error ratio": lambda: prom.value(
                'slo:peakgate_slo_error_ratio:rate5m{slo="interactive_availability"}') == 0.0,
            "SLO objective": lambda: prom.value('peakgate_slo_objective{slo="interactive_availability"}') == 0.999,
            "SLO burn windows": lambda: len(prom.query('peakgate_slo_burn_rate{slo="interactive_latency"}')) == 5,
            "SLO budget": lambda: prom.value(
                'peakgate_slo_error_budget_remaining{slo="interactive_availability"}') == 1.0,
            "SLO alerts off": lambda: {float(s["value"][1]) for s in prom.query("peakgate_slo_alert")} == {0.0},
            "process RSS": lambda: prom.value('process_resident_memory_bytes{job="peakgate"}') > 0,
            "requests by tenant": lambda: prom.value(  # open mode: every caller is the anonymous tenant
                'sum(peakgate_tenant_requests_total{tenant="anonymous",endpoint="/v1/translate"})') == 22.0,
            "recorded tenant error ratio": lambda: prom.value(
                'tenant:peakgate_tenant_requests_errors:ratio_rate5m{tenant="anonymous"}') == 0.0,
        }
        for what, holds in checks.items():
            prom.until(what, holds)
        groups = httpx.get(f"{prom.url}/api/v1/rules", timeout=5).json()["data"]["groups"]
        assert {r["health"] for g in groups for r in g["rules"]} == {"ok"}
        assert any(r["name"] == "PeakgateErrorBudgetBurn" for g in groups for r in g["rules"])


@contextlib.contextmanager
def _worker(config: Path, metrics_port: int, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "peakgate.cli", "worker", "--config", str(config),
                                 "--metrics-port", str(metrics_port)], stdout=sink, stderr=subprocess.STDOUT)
    try:
        yield proc
    finally:
        stop_process(proc, 15)


def _until_worker_ready(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"worker exited: {log.read_text(errors='replace')}"
        with contextlib.suppress(httpx.HTTPError):
            if metric(scrape(url), "peakgate_worker_ready") == 1.0:
                return
        time.sleep(0.2)
    raise AssertionError(f"worker not ready in 30 s: {log.read_text(errors='replace')}")


def test_prometheus_scrapes_a_scale_out_worker_beside_its_gateway(redis_server: RedisServer, tmp_path: Path) -> None:
    config = {**CONFIG, "data_dir": str(tmp_path / "data"),
              "queue": {"backend": "redis", "redis_url": redis_server.url, "heartbeat_s": 0.25, "claim_idle_ms": 1000}}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    port = free_port()
    log = tmp_path / "worker.log"
    with _worker(path, port, log) as proc:
        _until_worker_ready(f"http://127.0.0.1:{port}", proc, log)
        with serve(config) as server, prometheus({"peakgate": _host(server), "worker": f"127.0.0.1:{port}"},
                                                 tmp_path) as prom:
            prom.until("worker up", lambda: prom.value('peakgate_worker_ready{job="worker"}') == 1.0)
            _translate(server, 5)  # each request is one queue entry, run by the worker
            checks: dict[str, Callable[[], bool]] = {
                "entries served": lambda: prom.value(
                    'sum(peakgate_worker_entries_total{job="worker",outcome="served"})') == 5.0,
                "worker batches": lambda: prom.value('sum(peakgate_batch_size_count{job="worker"})') >= 1.0,
                "worker RSS": lambda: prom.value('process_resident_memory_bytes{job="worker"}') > 0,
                "gateway sees it": lambda: prom.value('sum(peakgate_queue_workers_ready{job="peakgate"})') >= 1.0,
            }
            for what, holds in checks.items():
                prom.until(what, holds)
