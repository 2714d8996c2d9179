"""/dashboard in headless Chromium against the served process: after some traffic the page draws its charts
and tiles with the figures (read from the DOM Chromium dumps), and a screenshot is kept.

`peakgate serve` runs as a subprocess on echo engines with a few milliseconds of engine time per batch. A
thread keeps translations coming while Chromium looks; /dashboard/data is polled a few times two seconds apart
first, so the server's ring holds several points and the charts draw lines. The screenshot lands in the test's
tmp dir; with PEAKGATE_UPDATE_SCREENSHOT=1 it is also copied to docs/dashboard.png (tests write into the repo
only then).
"""

from __future__ import annotations

import itertools
import math
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import httpx
import pytest

from bench._http import Server, serve

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs Debian `chromium` (scripts/dev-setup installs it)")
DOCS_SCREENSHOT = Path(__file__).resolve().parents[3] / "docs" / "dashboard.png"
PAIRS = (("en", "es"), ("es", "en"))
UPDATE_SCREENSHOT = os.environ.get("PEAKGATE_UPDATE_SCREENSHOT") == "1"
HISTORY_STEPS = 12 if UPDATE_SCREENSHOT else 4  # the docs' picture shows some history; the check needs little
MODELS = [{"name": f"echo-{s}-{t}", "engine": "echo", "source": s, "target": t, "delay_ms": 4.0} for s, t in PAIRS]


class Elements(HTMLParser):
    """The attributes of every element in a dumped DOM, by tag."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str]]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, {name: value or "" for name, value in attrs}))

    def one(self, name: str, value: str) -> dict[str, str]:
        (attrs,) = [attrs for _tag, attrs in self.found if attrs.get(name) == value]
        return attrs

    def count(self, tag: str) -> int:
        return sum(1 for found, _attrs in self.found if found == tag)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    names = [str(model["name"]) for model in MODELS]
    config: dict[str, object] = {"data_dir": str(tmp_path_factory.mktemp("dashboard-data")), "models": MODELS,
                                 "tiers": {"tiny": names, "medium": names}}
    with serve(config) as running:
        stop = threading.Event()
        sender = threading.Thread(target=_traffic, args=(running.url, stop))
        sender.start()
        try:
            with httpx.Client(base_url=running.url, timeout=10.0) as http:
                for _ in range(HISTORY_STEPS):  # the polls that fill the server's ring, a step apart
                    time.sleep(2.05)
                    assert http.get("/dashboard/data").status_code == 200
            yield running
        finally:
            stop.set()
            sender.join()


def _traffic(url: str, stop: threading.Event) -> None:
    """Translations until `stop`, at a rate that swings between ~20 and ~60 a second: one in three a new
    sentence (engine work), the others five repeated ones (cache hits), one in 25 refused (unknown target)."""
    started = time.monotonic()
    with httpx.Client(base_url=url, timeout=10.0) as http:
        for n in itertools.count():
            if stop.is_set():
                return
            text = f"Save the file number {n}" if n % 3 == 0 else f"Open the menu {n % 5}"
            body = {"segments": [text], "source": "en", "target": "xx" if n % 25 == 24 else "es"}
            http.post("/v1/translate", json=body)
            time.sleep(0.016 + 0.016 * math.sin(time.monotonic() - started))


def chromium(url: str, profile: Path, *args: str) -> str:
    assert CHROMIUM is not None
    done = subprocess.run(
        [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
         f"--user-data-dir={profile}", "--window-size=1400,1000", "--virtual-time-budget=8000", *args, url],
        capture_output=True, text=True, timeout=60, check=True,
    )
    return done.stdout


def test_dashboard_draws_the_served_figures(server: Server, tmp_path: Path) -> None:
    dom = Elements(chromium(f"{server.url}/dashboard", tmp_path / "profile", "--dump-dom"))
    assert dom.one("id", "status")["data-state"] == "live"
    for metric in ("rps", "success", "p50", "p95", "p99", "cache_hit", "busy"):
        assert float(dom.one("data-metric", metric)["data-value"]) > 0, metric
    assert float(dom.one("data-metric", "degradation")["data-value"]) == 0
    assert dom.one("data-metric", "budget")["data-state"] in ("none", "ok")  # "none": no SLO configured
    for chart in ("rps", "latency", "success", "queue", "hits", "busy"):
        assert int(dom.one("data-chart", chart)["data-points"]) >= HISTORY_STEPS, chart
    assert float(dom.one("data-chart", "rps")["data-value"]) > 0
    assert dom.count("path") >= 6  # a line for every chart's first series at least
    assert dom.count("tr") > 5  # the engine, tier and status tables are filled


def test_dashboard_screenshot_is_kept(server: Server, tmp_path: Path) -> None:
    shot = tmp_path / "dashboard.png"
    chromium(f"{server.url}/dashboard", tmp_path / "profile", f"--screenshot={shot}")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if UPDATE_SCREENSHOT:
        shutil.copyfile(shot, DOCS_SCREENSHOT)
