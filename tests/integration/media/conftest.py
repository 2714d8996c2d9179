"""Shared by the media integration tests: the served Apertium engine's config, and waiting for an async job."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from typing import Any, TypeAlias

import httpx
import pytest

from bench._http import Server
from peakgate.backends.apertium import MODES_DIR

JobWaiter: TypeAlias = Callable[[Server, httpx.Response, dict[str, str]], dict[str, Any]]
JOB_WITHIN_S = 25.0  # recognition and translation of one test file, on a busy 2-core machine


@pytest.fixture(scope="module")
def apertium_config(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A served config translating en->es with Apertium, in a throwaway data dir; add `keys` (and `media`)."""
    if shutil.which("apertium") is None or not (MODES_DIR / "eng-spa.mode").is_file():
        pytest.skip("apertium eng-spa is not installed (scripts/dev-setup installs it)")
    return {
        "data_dir": str(tmp_path_factory.mktemp("data")), "log_level": "warning",
        "models": [{"name": "apertium-en-es", "engine": "apertium", "source": "en", "target": "es",
                    "mode": "eng-spa"}],
        "tiers": {"medium": ["apertium-en-es"]}, "default_tier": "medium",
    }


def _wait_for_job(server: Server, accepted: httpx.Response, headers: dict[str, str]) -> dict[str, Any]:
    assert accepted.status_code == 202, accepted.text
    status_url = accepted.json()["status_url"]
    assert accepted.headers["location"] == status_url and accepted.json()["status"] == "recognising"
    deadline = time.monotonic() + JOB_WITHIN_S
    while True:
        reply = httpx.get(f"{server.url}{status_url}", headers=headers, timeout=10)
        assert reply.status_code == 200, reply.text
        body: dict[str, Any] = reply.json()
        if body["status"] in ("done", "error"):
            return body
        assert time.monotonic() < deadline, f"the job is still {body['status']} after {JOB_WITHIN_S:g} s"
        time.sleep(0.2)


@pytest.fixture
def finished_job() -> JobWaiter:
    """Given a POST's 202 answer: polls its status URL until the job is done or failed, and returns that status."""
    return _wait_for_job
