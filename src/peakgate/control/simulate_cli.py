"""`peakgate simulate`: replay a trace through each policy, print the comparison, draw the PNG.

    peakgate simulate --trace holiday|FILE [--policy threshold kpa predictive static-peak] [--config FILE]
                      [--history-s S] [--plot PATH] [--quiet]

Every policy sees the same arrivals (one seed). With the backlog deferred (the default) the predictive policy
runs a second time with the backlog run as submitted, to show what waiting for the trough saves.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

from peakgate.control.forecast import MINUTE_S, MinuteForecaster
from peakgate.control.forecast_backtest import Backtest, backtest
from peakgate.control.forecast_config import build_model
from peakgate.control.forecast_holtwinters import HoltWintersConfig
from peakgate.control.forecast_window import WindowConfig
from peakgate.control.policies import AnyPolicyConfig, PolicyKind, StaticPeakConfig, build_policy
from peakgate.control.simulate import Setup, Simulation, fleet_times, prepare, replicas_for
from peakgate.control.simulate_capacity import CapacityCurve, load_profile
from peakgate.control.simulate_config import SimulationConfig, load_simulation_config
from peakgate.control.simulate_report import attribution_table, backtest_table, cost_table, plot, slo_table
from peakgate.control.simulate_stats import RunResult
from peakgate.control.trace import Trace, load_trace
from peakgate.control.trace_holiday import holiday_trace

POLICIES: tuple[PolicyKind, ...] = ("threshold", "kpa", "predictive", "static-peak")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--trace", default="holiday", help="'holiday' (synthetic Spring-Festival day) or a CSV file")
    parser.add_argument("--policy", nargs="+", choices=POLICIES, default=list(POLICIES), help="policies to compare")
    parser.add_argument("--config", type=Path, help="simulation config, TOML or JSON (default: built in)")
    parser.add_argument("--history-s", type=float, default=0.0,
                        help="a CSV trace's first seconds that only train the forecaster (default 0)")
    parser.add_argument("--plot", type=Path, help="write the replica timeline PNG here")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    config = load_simulation_config(args.config)
    trace = holiday_trace(config.holiday) if args.trace == "holiday" else load_trace(Path(args.trace),
                                                                                      args.history_s)
    curve = CapacityCurve(load_profile(config.profile))
    setup = prepare(trace, config, curve, _forecaster(config))
    runs = compare(setup, args.policy, quiet=args.quiet or not sys.stderr.isatty())
    print(report(setup, runs, backtests(trace)))
    if args.plot is not None:
        start_h = trace.replay_from_step * trace.step_s % 86_400 / 3600
        plot(runs, args.plot, f"{trace.name}: {', '.join(r.name for r in runs)}", start_h)
        print(f"\nplot: {args.plot}")
    return 0


def _forecaster(config: SimulationConfig) -> MinuteForecaster[Any]:
    """The configured model with a horizon long enough for the backlog gate too."""
    horizon_s = max(config.forecast.horizon_s, config.backlog.horizon_s)
    return MinuteForecaster(build_model(config.forecast), int(horizon_s // MINUTE_S))


def compare(setup: Setup, kinds: Sequence[PolicyKind], quiet: bool) -> list[RunResult]:
    c = setup.config
    plans: list[tuple[str, PolicyKind, bool]] = [(kind, kind, c.backlog.defer) for kind in kinds]
    if "predictive" in kinds and c.backlog.defer:
        plans.append(("predictive, backlog as submitted", "predictive", False))
    minutes = setup.steps * c.step_s / 60
    with tqdm(total=int(minutes) * len(plans), unit="sim-min", disable=quiet, file=sys.stderr) as bar:
        return [_run_one(setup, name, kind, defer, bar.update) for name, kind, defer in plans]


def _run_one(setup: Setup, name: str, kind: PolicyKind, defer: bool, progress: Callable[[int], object]
             ) -> RunResult:
    """Every policy starts from a fleet sized for the first minute; static-peak from its own, all day."""
    c = setup.config
    configs: dict[PolicyKind, AnyPolicyConfig] = {"threshold": c.threshold, "kpa": c.kpa, "predictive": c.predictive,
                                                  "static-peak": c.static_peak}
    config = configs[kind]
    initial = replicas_for(setup, 0, c.static_peak.target_utilisation)
    if isinstance(config, StaticPeakConfig):
        initial = config.replicas or replicas_for(setup, None, config.target_utilisation)
        config = config.model_copy(update={"replicas": initial})
    return Simulation(setup, name, build_policy(config), config.tick_s, defer).run(initial, progress)


def backtests(trace: Trace) -> list[Backtest]:
    history, actual = trace.minutes(replay=False), trace.minutes(replay=True)
    out = []
    for name, model_config in (("window (10 min)", WindowConfig()), ("holt-winters", HoltWintersConfig())):
        for ahead in (1, 5):
            out.append(backtest(name, build_model(model_config), history, actual, ahead))
    return out


def report(setup: Setup, runs: Sequence[RunResult], tests: Sequence[Backtest]) -> str:
    c, curve, times = setup.config, setup.curve, fleet_times(setup)
    predictive = next((r for r in runs if r.name == "predictive"), runs[0])
    return "\n\n".join([
        f"trace {setup.trace.name}: {len(runs[0].timeline.serving)} minutes replayed; replica = "
        f"{curve.streams} x {curve.replica_rate / curve.streams:.1f} sentences/s ({curve.profile.name}); cold start "
        f"{times.cold_start_s:g} s, warm promotion {times.warm_promotion_s:g} s, warm pool "
        f"{times.warm_pool}; {c.cost.instance.name} on-demand {c.cost.instance.on_demand_per_hour}/h, spot "
        f"{c.cost.instance.spot_per_hour}/h (cap {c.cost.spot_price_cap:.0%} of on-demand)",
        "SLO: share of minutes in which " f"{c.slo.minute_quantile:.0%} of the arrivals waited within the class "
        "bound (interactive 500 ms, document 10 s, batch 120 s); backlog: share done by its deadline\n\n"
        + slo_table(runs, c.slo.minute_quantile),
        "Cost of the replayed window (price list currency)\n\n" + cost_table(runs),
        f"Attributed cost, {predictive.name} (top keys)\n\n" + attribution_table(predictive),
        "Forecast backtest on the replayed window (seeded with the history)\n\n" + backtest_table(tests),
    ])
