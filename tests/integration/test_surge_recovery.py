"""Issue 19, defects 1 and 2 on the real server: after a burst far past capacity the gateway serves again within
seconds (every dialect, every class, readiness back to 200), and every 429/503 of the burst carries Retry-After.

The burst runs on the real int8 student, so queue waits reach the interactive deadline as they did in the report
("interactive predicted wait 2998 ms + service would pass 3000 ms", for ten minutes after the burst). With the
fade and the probes turned off (`wait_half_life_s` and `probe_interval_s` at 1e9, i.e. the old behaviour) this
test fails: nothing is served for the whole recovery limit.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter

import httpx
import pytest

from bench import overload
from bench._http import Probe, Server, closed_loop_outcomes, serve
from peakgate.config import REPO_MODELS_DIR

pytestmark = pytest.mark.slow

CLIENTS = 1500  # each sends 1-6 sentences, and again as soon as it is answered: the filed reproduction
BURST_S = 6.0
RECOVERY_LIMIT_S = 20.0  # the goal is the class deadline (3 s) plus the fade; minutes is the defect
WORDS = ("open", "the", "file", "could", "not", "be", "saved", "settings", "window", "print", "close", "folder")


def _sentences(rng: random.Random, n: int) -> list[str]:
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9))).capitalize() + f" {rng.randint(0, 9999)}."
            for _ in range(n)]


def _burst(rng: random.Random) -> list[Probe]:
    return [Probe("interactive", json.dumps({"text": _sentences(rng, rng.randint(1, 6)), "target_lang": "ES"}).encode(),
                  1, timeout_s=30.0) for _ in range(CLIENTS)]


def _served_everywhere(client: httpx.Client, rng: random.Random) -> bool:
    (text,) = _sentences(rng, 1)
    replies = (
        client.post("/v1/translate", json={"segments": [text], "source": "en", "target": "es"}),
        client.post("/v2/translate", data={"text": text, "target_lang": "ES"}),
        client.post("/translate", json={"q": text, "source": "en", "target": "es"}),
        client.post("/v1/translate", json={"segments": [text], "source": "en", "target": "es", "priority": "batch"}),
        client.get("/readyz"),
    )
    return all(r.status_code == 200 for r in replies)


def _seconds_to_recover(server: Server, rng: random.Random) -> float | None:
    started = time.monotonic()
    with httpx.Client(base_url=server.url, timeout=10.0) as client:
        while time.monotonic() - started < RECOVERY_LIMIT_S:
            if _served_everywhere(client, rng):
                return time.monotonic() - started
            time.sleep(0.25)
    return None


def _config() -> dict[str, object]:
    return overload.server_config(overload.model_config("student-en-es-int8"))


@pytest.mark.skipif(not (REPO_MODELS_DIR / "student-en-es-int8" / "model.bin").is_file(),
                    reason="the int8 student is not built")
def test_the_gateway_serves_again_within_seconds_after_a_burst_far_past_capacity() -> None:
    rng = random.Random(19)
    with serve(_config()) as server:
        outcomes, _ = asyncio.run(closed_loop_outcomes(server.url, _burst(rng), CLIENTS, path="/v2/translate",
                                                       duration_s=BURST_S))
        statuses = Counter(o.status for o in outcomes)
        refused = [o for o in outcomes if o.status in (429, 503)]
        assert refused, f"the burst did not overload the server: {statuses}"
        assert all(o.retry_after for o in refused), "a 429/503 without Retry-After"
        assert set(statuses) <= {200, 429, 503}, statuses  # nothing lost, no 5xx but the retry-later ones
        recovered_s = _seconds_to_recover(server, rng)
    assert recovered_s is not None, f"still refusing {RECOVERY_LIMIT_S} s after the burst ({statuses})"
