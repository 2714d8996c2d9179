"""The discrete-time simulator: a trace's arrivals through a simulated fleet, scaled by the real policy code.

Each step (`step_s`, 1 s by default) draws Poisson arrivals per stream, lets the fleet move (replicas ready,
drained, interrupted), runs the policy when its tick is due (the same `Policy`, `Forecaster` and `clamp` the
control loop runs, on simulated time), and serves queued work in class order, FIFO within a class, up to the
serving replicas' measured capacity (`simulate_capacity`). A request's queue wait is the time from its arrival
(mid-step) to its place in the step's service, plus the duration of the batch it waits behind. Backlog jobs
wait in a pool until `backlog.plan` releases them (or, with deferral off, run as submitted). Instance-seconds
are billed per market and each minute's cost is attributed by the work served in it.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from peakgate.config import PRIORITY_ORDER
from peakgate.control import backlog
from peakgate.control.clamps import clamp
from peakgate.control.contract import Forecast, Policy, PolicyContext, Signals
from peakgate.control.cost import MARKETS, CostKey, CostLedger, Market, burst_market, price_per_s
from peakgate.control.forecast import MinuteForecaster
from peakgate.control.simulate_capacity import CapacityCurve
from peakgate.control.simulate_config import SimulationConfig
from peakgate.control.simulate_fleet import Fleet, FleetTimes
from peakgate.control.simulate_stats import QUEUES, RunResult, Timeline, WaitStats
from peakgate.control.trace import Trace

CLASSES = PRIORITY_ORDER  # the priority classes, in service order; the released backlog runs after them
DEFAULT_COLD_START_S, DEFAULT_WARM_PROMOTION_S = 20.0, 2.0  # without a configured or measured figure
Cohort = list[float]  # [arrival_s, count, deadline_s]: mutable, the head is served in part


@dataclass(frozen=True, slots=True)
class Setup:
    """What every run of one comparison shares."""

    trace: Trace
    config: SimulationConfig
    curve: CapacityCurve
    forecaster: MinuteForecaster[Any]
    arrivals: dict[str, np.ndarray[Any, np.dtype[np.float64]]]  # per stream per step (the same for every run)

    @property
    def steps(self) -> int:
        return len(self.arrivals["interactive"])


def prepare(trace: Trace, config: SimulationConfig, curve: CapacityCurve, forecaster: MinuteForecaster[Any]
            ) -> Setup:
    rng = np.random.default_rng(config.seed)
    dt = config.step_s
    index = (np.arange(int(trace.per_second("interactive").size / dt)) * dt).astype(np.int64)
    arrivals = {s: rng.poisson(trace.per_second(s)[index] * dt).astype(np.float64) for s in QUEUES}
    return Setup(trace, config, curve, forecaster, arrivals)


def replicas_for(setup: Setup, minute: int | None, utilisation: float) -> int:
    """Replicas that carry a replayed minute (None: the busiest) at `utilisation` of measured capacity."""
    minutes = setup.trace.minutes(replay=True)
    rate = float(np.max(minutes) if minute is None else minutes[minute])
    return max(setup.config.clamps.min_replicas, math.ceil(rate / (setup.curve.replica_rate * utilisation)))


def fleet_times(setup: Setup) -> FleetTimes:
    """The fleet timings: start-up times as configured, else as the capacity profile measured them, else 20 s
    cold and 2 s warm."""
    fleet, profile = setup.config.fleet, setup.curve.profile
    cold = fleet.cold_start_s or profile.cold_start_s or DEFAULT_COLD_START_S
    warm = fleet.warm_promotion_s or profile.warm_promotion_s or DEFAULT_WARM_PROMOTION_S
    return FleetTimes(cold, warm, fleet.warm_pool, fleet.drain_s, fleet.spot_interruptions_per_hour,
                      fleet.spot_notice_s)


class Simulation:
    def __init__(self, setup: Setup, name: str, policy: Policy[Any], tick_s: float, defer: bool) -> None:
        c = setup.config
        self.setup, self.name, self.policy, self.tick_s, self.defer = setup, name, policy, tick_s, defer
        self.dt = c.step_s
        self.fleet = Fleet(fleet_times(setup),
                           baseline=c.cost.baseline_replicas if c.cost.baseline_replicas is not None
                           else c.clamps.min_replicas,
                           burst=burst_market(c.cost), rng=np.random.default_rng(c.seed + 1))
        minutes = math.ceil(setup.steps * self.dt / 60)
        self.waits, self.timeline, self.ledger = WaitStats(minutes), Timeline(), CostLedger()
        self.queues: list[deque[Cohort]] = [deque() for _ in QUEUES]
        self.queued = [0.0] * len(QUEUES)
        self.pool: deque[Cohort] = deque()  # backlog not yet released
        self.release = backlog.Release(urgent_before_s=0.0, fill_per_s=0.0, reason="not planned yet")
        self.bounds_s = [c.slo.max_queue_wait_ms[q] / 1000 for q in CLASSES] + [c.backlog.deadline_s]
        # Work entering the queues (backlog when released), cumulative per step: the policies' request rate.
        self.cumulative = np.zeros(setup.steps + 1)
        self.entered = 0.0
        self.policy_state = policy.initial()
        history = setup.trace.minutes(replay=False, streams=CLASSES if defer else QUEUES)
        self.forecast_state = setup.forecaster.initial(history)
        self.forecast: Forecast | None = None
        self.desired = 0
        self.decisions = 0
        self.tick_served = self.tick_capacity = 0.0
        self.tick_waits: list[tuple[float, float]] = []
        self.minute_served = dict.fromkeys(QUEUES, 0.0)
        self.minute_cost = dict.fromkeys(MARKETS, 0.0)
        self.instance_s = 0.0
        self.last_served_per_s = 0.0
        self.class_rate_per_s = 0.0  # the classes' work served over the last minute (the backlog gate's load)

    def run(self, initial_replicas: int, progress: Callable[[int], object] | None = None) -> RunResult:
        self.fleet.start(initial_replicas, now=0.0)
        self.desired = initial_replicas
        next_tick = 0.0
        steps_per_minute = round(60 / self.dt)
        for k in range(self.setup.steps):
            now = k * self.dt
            self.fleet.advance(now, self.dt)
            self._arrive(k, now)
            if self.pool:
                self._release_backlog()
            self._serve(now)
            self._bill()
            self.cumulative[k + 1] = self.cumulative[k] + self.entered
            self.entered = 0.0
            # The loop reads what a step left behind (the queue still waiting); its decision acts from the next.
            if k % steps_per_minute == 0:
                self._minute_start(k + 1, now + self.dt)
            if now >= next_tick:
                self._control(k + 1, now + self.dt)
                next_tick += self.tick_s
            if (k + 1) % steps_per_minute == 0:
                self._minute_end(k, now)
                if progress is not None:
                    progress(1)
        return self._result(self.setup.steps * self.dt)

    def _arrive(self, k: int, now: float) -> None:
        at = now + self.dt / 2
        for q, stream in enumerate(QUEUES):
            count = float(self.setup.arrivals[stream][k])
            if count <= 0:
                continue
            self.waits.arrive(q, at, count)
            cohort = [at, count, at + self.bounds_s[q]]
            if q == len(CLASSES) and self.defer:
                self.pool.append(cohort)
            else:
                self.queues[q].append(cohort)
                self.queued[q] += count
                self.entered += count

    def _minute_start(self, k: int, now: float) -> None:
        """Close the forecaster's minute and ask the backlog gate what it may release over this one."""
        self.forecast, self.forecast_state = self.setup.forecaster.update(self._signals(k, now), self.forecast_state)
        if self.defer and now >= 60.0:  # the gate needs a whole minute's load
            floor = self.setup.config.clamps.min_replicas * self.setup.curve.replica_rate
            self.release = backlog.plan(self.setup.config.backlog, now, self.forecast, self.class_rate_per_s, floor)

    def _release_backlog(self) -> None:
        """Move due backlog, then a step's share of the trough's spare capacity, into the backlog queue (a
        trickle, not a lump: queued work makes the policies scale, which spare capacity must not)."""
        budget = self.release.fill_per_s * self.dt
        deferrable = len(CLASSES)
        while self.pool:
            cohort = self.pool[0]
            urgent = cohort[2] <= self.release.urgent_before_s
            if not urgent and budget <= 0:
                break
            take = cohort[1] if urgent else min(cohort[1], budget)
            budget -= 0.0 if urgent else take
            self.queues[deferrable].append([cohort[0], take, cohort[2]])
            self.queued[deferrable] += take
            self.entered += take
            cohort[1] -= take
            if cohort[1] <= 1e-9:
                self.pool.popleft()

    def _signals(self, k: int, now: float) -> Signals:
        window = min(k, round(60 / self.dt))
        rate = (self.cumulative[k] - self.cumulative[k - window]) / (window * self.dt) if window else 0.0
        utilisation = self.tick_served / self.tick_capacity if self.tick_capacity > 0 else 0.0
        serving = self.fleet.serving_total
        return Signals(
            at_s=now, replicas=serving, cpu_utilisation=min(1.0, utilisation),
            queue_by_class={"interactive": round(self.queued[0]), "document": round(self.queued[1]),
                            "batch": round(self.queued[2] + self.queued[3])},
            p95_latency_ms=1000 * _weighted_quantile(self.tick_waits, 0.95),
            in_flight=round(self.setup.curve.in_flight(self.last_served_per_s, serving)),
            request_rate_per_s=float(rate), capacity_per_replica_per_s=self.setup.curve.replica_rate,
        )

    def _control(self, k: int, now: float) -> None:
        current = self.fleet.current()
        ctx = PolicyContext(self._signals(k, now), current, self.forecast, startup_s=self.fleet.times.cold_start_s)
        decision, self.policy_state = self.policy.decide(ctx, self.policy_state)
        desired = clamp(decision, current, self.setup.config.clamps).desired_replicas
        if desired != self.desired:
            self.decisions += 1
        self.desired = desired
        self.fleet.scale_to(desired, now)
        self.tick_served = self.tick_capacity = 0.0
        self.tick_waits = []

    def _serve(self, now: float) -> None:
        serving = self.fleet.serving_total
        capacity = serving * self.setup.curve.replica_rate * self.dt
        self.tick_capacity += capacity
        load = sum(self.queued)
        batch_s = self.setup.curve.batch_time_s(min(load / self.dt, capacity / self.dt) / max(1, serving)
                                                / self.setup.curve.streams) if load else 0.0
        used = 0.0
        for q, queue in enumerate(self.queues):
            while queue and used < capacity:
                cohort = queue[0]
                take = min(cohort[1], capacity - used)
                served_at = now + (used + take / 2) / capacity * self.dt
                wait = max(0.0, served_at - cohort[0]) + batch_s
                self.waits.served(q, cohort[0], wait, take, on_time=cohort[0] + wait <= cohort[2])
                self.tick_waits.append((wait, take))
                used += take
                self.queued[q] -= take
                self.minute_served[QUEUES[q]] += take
                cohort[1] -= take
                if cohort[1] <= 1e-9:
                    queue.popleft()
        self.tick_served += used
        self.last_served_per_s = used / self.dt

    def _bill(self) -> None:
        billed = self.fleet.billed()
        for market in MARKETS:
            self.minute_cost[market] += billed[market] * price_per_s(self.setup.config.cost, market) * self.dt
            self.instance_s += billed[market] * self.dt

    def _minute_end(self, k: int, now: float) -> None:
        usage = self._usage()
        self.class_rate_per_s = sum(self.minute_served[q] for q in CLASSES) / 60
        for market in MARKETS:
            self.ledger.add(market, self.minute_cost[market], usage)
        self.minute_served = dict.fromkeys(QUEUES, 0.0)
        self.minute_cost = dict.fromkeys(MARKETS, 0.0)
        billed, t = self.fleet.billed(), self.timeline
        window = round(60 / self.dt)
        t.desired.append(self.desired)
        t.serving.append(self.fleet.serving_total)
        t.on_demand.append(billed["on-demand"])
        t.spot.append(billed["spot"])
        t.arrivals_per_s.append(float(self.cumulative[k + 1] - self.cumulative[k + 1 - window]) / 60)
        t.capacity_per_s.append(self.fleet.serving_total * self.setup.curve.replica_rate)
        t.forecast_upper_per_s.append(self.forecast.upper_per_s[0] if self.forecast else float("nan"))

    def _usage(self) -> dict[CostKey, float]:
        model = self.setup.curve.profile.model
        usage: dict[CostKey, float] = {}
        for stream, served in self.minute_served.items():
            for entry in self.setup.trace.mix[stream]:
                key = CostKey(model, entry.tier, entry.tenant, entry.endpoint)
                usage[key] = usage.get(key, 0.0) + served * entry.share
        return usage

    def _result(self, end_s: float) -> RunResult:
        """Work still queued at the end is late if its bound passed, else carried (out of the statistics)."""
        carried = 0.0
        for q, queue in enumerate([*self.queues, self.pool]):
            for arrival, count, deadline in queue:
                if deadline > end_s:
                    carried += count
                    self.waits.arrive(min(q, len(CLASSES)), arrival, -count)
                else:
                    self.waits.served(min(q, len(CLASSES)), arrival, end_s - arrival, count, on_time=False)
        cost: dict[Market, float] = self.ledger.by_market()
        on_demand = self.instance_s * price_per_s(self.setup.config.cost, "on-demand")
        return RunResult(self.name, len(self.timeline.serving), self.waits, self.timeline, cost, on_demand,
                         dict(self.ledger.totals), self.decisions, self.fleet.interruptions, carried)


def _weighted_quantile(samples: list[tuple[float, float]], quantile: float) -> float:
    if not samples:
        return 0.0
    ordered = sorted(samples)
    total = sum(n for _w, n in ordered)
    running = 0.0
    for wait, n in ordered:
        running += n
        if running >= quantile * total:
            return wait
    return ordered[-1][0]
