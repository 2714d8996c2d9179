"""A real Prometheus (Debian's) scrapes a running `peakgate serve`, with the committed rule files loaded: PromQL
finds the requests by status, a p99 through histogram_quantile, the recording rules' series, the SLO gauges and
the process metrics. Workers of the scale-out queue serve no HTTP (their counts travel in their heartbeats, and
the gateway exports `peakgate_queue_workers_ready`), so the gateway is the one target."""

from __future__ import annotations

import contextlib
import math
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench._http import Server, free_port, serve
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
def prometheus(target: str, tmp: Path) -> Iterator[Prometheus]:
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.skip("prometheus not found (Debian's prometheus package; scripts/dev-setup installs it)")
    config = tmp / "prometheus.yml"
    rule_files = "".join(f"  - {DEPLOY / name}\n" for name in (RECORDING_FILE, ALERTS_FILE))
    config.write_text(f"global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n{rule_files}"
                      f"scrape_configs:\n  - job_name: peakgate\n    static_configs:\n"
                      f"      - targets: ['{target}']\n")
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
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _translate(server: Server, count: int) -> None:
    with httpx.Client(base_url=server.url, timeout=10) as client:
        for i in range(count):
            reply = client.post("/v1/translate", json={"segments": [f"Save file {i}."], "source": "en", "target": "es"})
            assert reply.status_code == 200, reply.text


def _statuses(prom: Prometheus, promql: str) -> dict[str, float]:
    return {s["metric"]["status"]: float(s["value"][1]) for s in prom.query(promql)}


def test_prometheus_scrapes_peakgate_and_promql_finds_the_series(tmp_path: Path) -> None:
    with serve(CONFIG) as server, prometheus(server.url.removeprefix("http://"), tmp_path) as prom:
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
        }
        for what, holds in checks.items():
            prom.until(what, holds)
        groups = httpx.get(f"{prom.url}/api/v1/rules", timeout=5).json()["data"]["groups"]
        assert {r["health"] for g in groups for r in g["rules"]} == {"ok"}
        assert any(r["name"] == "PeakgateErrorBudgetBurn" for g in groups for r in g["rules"])
