"""The control loop: every policy `tick_s`, signals → forecast → observers → policy → clamps → provider, then the
warm pool.

Each tick takes one `Signals` snapshot, folds it into the forecaster (if one is configured), tells the tick
observers (the live cost meter, the off-peak publisher) the signals, the forecast and the fleet since the last
tick, hands the policy a frozen `PolicyContext` (with the measured cold-start time), clamps its answer
(`clamps.clamp`: hysteresis, step limits, bounds) and asks the provider for that many serving replicas; the
provider reconciles on every call, so a start that failed is retried once its backoff has passed. Then the warm
pool bridges the gap between the replicas asked for and the cold ones serving, and the provider keeps the pool at
its size. Every decision is logged with its reason and counted by policy and rule; every lifecycle event is
logged and counted.

Nothing stops the loop: a stage that fails (Redis or the provider's API out of reach) is logged and counted
and the tick ends there, a failing provider is left alone with exponential backoff, and an unexpected
exception (a bug in a policy) is logged with its traceback before the next tick.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Awaitable, Sequence
from typing import Any, TypeVar

from peakgate.cache.redis_l2 import Backoff
from peakgate.clock import Clock
from peakgate.control.clamps import clamp
from peakgate.control.contract import (
    Decision,
    Forecast,
    Policy,
    PolicyContext,
    ProviderState,
    Signals,
    Tick,
    TickObserver,
)
from peakgate.control.forecast import Forecaster
from peakgate.control.loop_metrics import AutoscaleMetrics
from peakgate.control.loop_settings import AutoscaleConfig
from peakgate.control.providers.base import BeatSource, ScalingProvider
from peakgate.control.signals import SignalSource
from peakgate.control.warm import WarmPool, warm_target
from peakgate.control.warm_timing import StartupTimer
from peakgate.errors import PeakgateError
from peakgate.scaleout.cluster import Heartbeat
from peakgate.scaleout.wall import WallClock
from peakgate.scheduling.timing import wait_any

_log = logging.getLogger(__name__)
_T = TypeVar("_T")


class ControlLoop:
    def __init__(
        self, *, config: AutoscaleConfig, signals: SignalSource, policy: Policy[Any], policy_name: str,
        provider: ScalingProvider, beats: BeatSource, warm: WarmPool | None, timer: StartupTimer, clock: Clock,
        wall: WallClock, metrics: AutoscaleMetrics, forecaster: Forecaster[Any] | None = None,
        observers: Sequence[TickObserver] = (),
    ) -> None:
        self._config = config
        self._signals = signals
        self._policy = policy
        self._policy_name = policy_name
        self._state = policy.initial()
        self._provider = provider
        self._beats = beats
        self._warm = warm
        self._timer = timer
        self._clock = clock
        self._wall = wall
        self._metrics = metrics
        self._forecaster = forecaster
        self._forecast_state = None if forecaster is None else forecaster.initial()
        self._observers = tuple(observers)
        self._fleet: ProviderState | None = None  # as the provider last reported it
        self._tick_s = config.policy.tick_s
        self._backoff = Backoff(clock, config.backoff_initial_s, config.backoff_max_s)

    async def run(self, stop: asyncio.Event) -> None:
        """Tick every policy `tick_s` until `stop` is set."""
        stopped = asyncio.ensure_future(stop.wait())
        try:
            while not stop.is_set():
                started = self._clock.now()
                try:
                    await self.tick()
                except Exception:  # a bug must not stop scaling: reported, and the next tick tries again
                    self._metrics.errors.labels("unexpected").inc()
                    _log.exception("autoscale tick failed unexpectedly")
                await wait_any([stopped], self._clock, started + self._tick_s)
        finally:
            stopped.cancel()

    async def tick(self) -> Decision | None:
        """One pass; the decision applied (clamped), or None when a stage failed or the provider backs off."""
        try:
            return await self._tick()
        except _Skipped:
            return None

    async def _tick(self) -> Decision:
        signals = await self._attempt("signals", self._signals.snapshot())
        self._observe(signals)
        beats = await self._optional("heartbeats", self._beats.heartbeats())
        if beats is not None:
            self._timer.observe(beats)
        forecast = self._forecast(signals)
        await self._notify(Tick(signals, forecast, self._fleet))
        if not self._backoff.ready():
            _log.debug("provider backing off: no decision this tick")
            raise _Skipped
        state = await self._provider_call("provider", self._provider.current())
        ctx = PolicyContext(signals, state.serving + state.starting, forecast, self._timer.cold_s)
        decision, self._state = self._policy.decide(ctx, self._state)
        decision = clamp(decision, ctx.current_replicas, self._config.clamps)
        self._record(decision, ctx)
        applied = await self._provider_call("scale", self._provider.scale_to(decision.desired_replicas))
        self._report(dataclasses.replace(applied, events=state.events + applied.events))
        if beats is not None and self._warm is not None:
            await self._keep_warm(self._warm, decision.desired_replicas, beats, forecast, signals)
        return decision

    async def _keep_warm(self, warm: WarmPool, desired: int, beats: list[Heartbeat], forecast: Forecast | None,
                         signals: Signals) -> None:
        bridge = await self._optional("warm", warm.bridge(desired, beats, timed=signals.queue_length > 0))
        for event in () if bridge is None else bridge.events:
            self._metrics.events.labels(event.kind).inc()
        target = warm_target(self._config.warm, forecast, signals, self._timer.cold_s)
        self._metrics.warm_target.set(target)
        # Promoted workers still belong to the pool: `target` stand by besides them (the pool refills).
        with contextlib.suppress(_Skipped):
            await self._provider_call("warm", self._provider.keep_warm(target + (bridge.promoted if bridge else 0)))

    def _forecast(self, signals: Signals) -> Forecast | None:
        if self._forecaster is None:
            return None
        forecast, self._forecast_state = self._forecaster.update(signals, self._forecast_state)
        return forecast

    async def _notify(self, tick: Tick) -> None:
        for observer in self._observers:
            try:
                await self._optional(observer.stage, observer.observe(tick))
            except Exception:  # a bug in cost or off-peak must not stop scaling
                self._metrics.errors.labels(observer.stage).inc()
                _log.exception("autoscale %s failed unexpectedly", observer.stage)

    def _observe(self, signals: Signals) -> None:
        for name, value in (("replicas", signals.replicas), ("cpu_utilisation", signals.cpu_utilisation),
                            ("queue_length", signals.queue_length), ("p95_latency_ms", signals.p95_latency_ms),
                            ("in_flight", signals.in_flight), ("request_rate_per_s", signals.request_rate_per_s)):
            self._metrics.signal.labels(name).set(value)

    def _record(self, decision: Decision, ctx: PolicyContext) -> None:
        current, desired = ctx.current_replicas, decision.desired_replicas
        if desired > current and ctx.signals.queue_length:  # see `warm_timing`: only timed with work waiting
            self._timer.scaled_up(desired - current, self._wall.now())
        elif desired < current:
            self._timer.scaled_down()
        self._metrics.decisions.labels(self._policy_name, decision.rule).inc()
        self._metrics.desired.set(desired)
        _log.info("autoscale decision: %d -> %d replicas, policy %s, rule %s: %s (queue %d, p95 %.0f ms, "
                  "%.1f req/s, cpu %.2f)", current, desired, self._policy_name, decision.rule, decision.reason,
                  ctx.signals.queue_length, ctx.signals.p95_latency_ms, ctx.signals.request_rate_per_s,
                  ctx.signals.cpu_utilisation)

    def _report(self, state: ProviderState) -> None:
        self._fleet = state
        for name in ("serving", "starting", "draining", "warm"):
            self._metrics.replicas.labels(name).set(getattr(state, name))
        for event in state.events:
            self._metrics.events.labels(event.kind).inc()
            level = logging.WARNING if event.kind == "failed" else logging.INFO
            _log.log(level, "replica %s %s%s", event.replica, event.kind, f": {event.detail}" if event.detail else "")

    async def _provider_call(self, stage: str, call: Awaitable[_T]) -> _T:
        """A provider call; one that fails leaves the provider alone for a backoff period."""
        try:
            result = await self._attempt(stage, call)
        except _Skipped:
            delay = self._backoff.failed()
            _log.warning("provider failing (%d in a row): next call in %.1fs", self._backoff.failures, delay)
            raise
        self._backoff.succeeded()
        return result

    async def _optional(self, stage: str, call: Awaitable[_T]) -> _T | None:
        try:
            return await self._attempt(stage, call)
        except _Skipped:
            return None

    async def _attempt(self, stage: str, call: Awaitable[_T]) -> _T:
        try:
            return await call
        except PeakgateError as exc:
            self._metrics.errors.labels(stage).inc()
            _log.warning("autoscale %s failed: %s", stage, exc.message)
            raise _Skipped(stage) from exc


class _Skipped(Exception):
    """A stage failed (reported already): the tick ends here."""
