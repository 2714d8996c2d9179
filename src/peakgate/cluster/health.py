"""Active health checks: every gateway's `/healthz` (alive) and `/readyz` (ready) each `health_interval_s`.

Up and down move with hysteresis (`failures_before_down` failed checks in a row to go down,
`successes_before_up` passed ones to come back), so one slow answer on a busy host does not flap a cluster;
readiness follows the latest `/readyz` the gateway answered, so an overloaded gateway sheds the router's traffic
within one interval. A gateway's first check decides at once: the router serves as soon as it has looked once.
A connection the proxy could not open counts as one failed check.

A gateway that goes silent is down after about `failures_before_down` × (interval + timeout) seconds.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

import httpx

from peakgate.clock import Clock

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Check:
    """One round of probes of one gateway."""

    alive: bool
    ready: bool


@dataclass(frozen=True, slots=True)
class Health:
    up: bool = False
    ready: bool = False
    streak: int = 0  # checks in a row that disagree with `up`
    checked: bool = False


@dataclass(frozen=True, slots=True)
class Hysteresis:
    failures_before_down: int
    successes_before_up: int


def observe(health: Health, check: Check, rule: Hysteresis) -> Health:
    """The gateway's health after one more check (pure). A check that disagrees with `up` changes nothing
    but the streak until the streak is long enough."""
    settled = Health(check.alive, check.alive and check.ready, 0, True)
    if not health.checked or check.alive == health.up:
        return settled
    streak = health.streak + 1
    needed = rule.successes_before_up if check.alive else rule.failures_before_down
    return settled if streak >= needed else Health(health.up, health.ready, streak, True)


class Prober(Protocol):
    async def __call__(self, base_url: str) -> Check: ...


class HttpProber:
    """GET `/healthz` and `/readyz` side by side; anything but a 200 in time is a failed probe."""

    def __init__(self, client: httpx.AsyncClient, timeout_s: float) -> None:
        self._client = client
        self._timeout_s = timeout_s

    async def __call__(self, base_url: str) -> Check:
        alive, ready = await asyncio.gather(self._ok(f"{base_url}/healthz"), self._ok(f"{base_url}/readyz"))
        return Check(alive, ready)

    async def _ok(self, url: str) -> bool:
        try:
            response = await self._client.get(url, timeout=self._timeout_s)
        except httpx.HTTPError:
            return False  # refused, reset or timed out: exactly what a failed check is
        return response.status_code == 200


class HealthChecker:
    """Every gateway's `Health`, keyed by base URL, refreshed on the injected clock."""

    def __init__(self, urls: Iterable[str], prober: Prober, clock: Clock, rule: Hysteresis,
                 interval_s: float) -> None:
        self._health = {url: Health() for url in urls}
        self._prober = prober
        self._clock = clock
        self._rule = rule
        self._interval_s = interval_s

    def health(self, url: str) -> Health:
        return self._health[url]

    def record(self, url: str, check: Check) -> None:
        before = self._health[url]
        after = observe(before, check, self._rule)
        self._health[url] = after
        if after.up != before.up or not before.checked:
            _log.log(logging.INFO if after.up else logging.WARNING, "gateway %s is %s", url,
                     "up" if after.up else "down")

    async def check_all(self) -> None:
        urls = list(self._health)
        checks = await asyncio.gather(*(self._prober(url) for url in urls))
        for url, check in zip(urls, checks, strict=True):
            self.record(url, check)

    async def run(self) -> None:
        """Check every interval until cancelled (after the first round, which start-up runs itself)."""
        while True:
            await self._clock.sleep(self._interval_s)
            await self.check_all()
