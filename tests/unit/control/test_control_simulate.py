"""The simulator: capacity curves from the measured profile, whole runs on small traces (the same policy code
on simulated time), the config's errors, and `peakgate simulate` end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from peakgate.cli import main
from peakgate.control.forecast_config import build_forecaster
from peakgate.control.forecast_window import WindowConfig
from peakgate.control.policies import StaticPeakConfig, StaticPeakPolicy, build_policy
from peakgate.control.predictive import PredictiveConfig
from peakgate.control.simulate import Setup, Simulation, prepare
from peakgate.control.simulate_capacity import CapacityCurve, load_profile
from peakgate.control.simulate_config import SimulationConfig, load_simulation_config
from peakgate.control.simulate_stats import RunResult
from peakgate.control.trace import Trace
from peakgate.errors import ConfigError

CURVE = CapacityCurve(load_profile("cpu-int8"))
REPLICA = CURVE.replica_rate  # 2 x 442.3 sentences/s


def test_the_cpu_profile_holds_the_measured_engine_figures() -> None:
    profile = CURVE.profile
    assert profile.sentences_per_s_by_batch == {1: 156.7, 8: 347.5, 32: 442.3}
    assert "bench.engines" in profile.source and profile.streams_per_replica == 2
    assert CURVE.replica_rate == pytest.approx(884.6)


def test_batches_grow_with_the_load_along_the_curve() -> None:
    assert CURVE.batch_for(100.0) == 1.0  # below the batch-1 rate
    assert CURVE.batch_for(347.5) == pytest.approx(8.0)
    assert CURVE.batch_for(1000.0) == 32.0  # saturated
    assert CURVE.batch_time_s(347.5) == pytest.approx(8 / 347.5)
    assert CURVE.in_flight(2 * 347.5, replicas=1) == pytest.approx(16.0)  # 2 streams x batches of 8


def test_the_gpu_profile_is_an_empty_slot_until_measured() -> None:
    with pytest.raises(ConfigError, match="no measured rates yet"):
        CapacityCurve(load_profile("gpu"))


def test_a_malformed_profile_names_the_field(tmp_path: Path) -> None:
    data = json.loads((Path(__file__).resolve().parents[3] / "src/peakgate/control/profiles/cpu-int8.json")
                      .read_text(encoding="utf-8"))
    data["sentences_per_s_by_batch"] = {"1": 400, "8": 300}
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ConfigError, match="sentences_per_s_by_batch: Value error, the rate must not fall"):
        load_profile(str(path))


def flat_trace(interactive: list[float], step_s: int = 60) -> Trace:
    n = len(interactive)
    rates = {"interactive": np.array(interactive, dtype=np.float64), "document": np.zeros(n),
             "batch": np.zeros(n), "deferrable": np.zeros(n)}
    return Trace("test", step_s, rates)


def setup_for(trace: Trace, **config: Any) -> Setup:
    sim_config = SimulationConfig.model_validate({"fleet": {"spot_interruptions_per_hour": 0}, **config})
    return prepare(trace, sim_config, CURVE, build_forecaster(WindowConfig()))


def run(setup: Setup, config: Any, initial: int, defer: bool = True) -> RunResult:
    return Simulation(setup, "run", build_policy(config), config.tick_s, defer).run(initial)


def test_a_fleet_with_room_meets_every_slo_and_costs_its_instance_hours() -> None:
    setup = setup_for(flat_trace([1000.0] * 30), clamps={"min_replicas": 1, "max_replicas": 10})
    result = run(setup, StaticPeakConfig(replicas=2), 2)
    assert result.minutes == 30
    assert result.waits.minute_attainment(0, 0.99) == 1.0
    assert result.waits.quantile_wait_s(0, 0.99) < 0.1
    # 2 serving + 2 warm, for half an hour: baseline 1 on-demand, the rest spot.
    c = setup.config.cost.instance
    assert result.cost["on-demand"] == pytest.approx(c.on_demand_per_hour / 2)
    assert result.cost["spot"] == pytest.approx(3 * c.spot_per_hour / 2)
    assert result.cost_all_on_demand == pytest.approx(4 * c.on_demand_per_hour / 2)


def test_an_overloaded_fleet_misses_the_interactive_slo_and_its_waits_grow() -> None:
    setup = setup_for(flat_trace([1000.0] * 11), clamps={"min_replicas": 1, "max_replicas": 10})
    result = run(setup, StaticPeakConfig(replicas=1), 1)  # 884.6/s for 1000/s
    assert result.waits.minute_attainment(0, 0.99) < 0.2
    assert result.waits.quantile_wait_s(0, 0.99) > 30.0


def test_the_predictive_policy_follows_a_surge_with_the_same_code_as_the_loop() -> None:
    surge = [1000.0] * 10 + [1000.0 + 1800.0 * i for i in range(1, 6)] + [10_000.0] * 15
    setup = setup_for(flat_trace(surge), clamps={"min_replicas": 2, "max_replicas": 40})
    result = run(setup, PredictiveConfig(), 2)
    assert max(result.timeline.serving) >= 10_000 / REPLICA
    assert result.waits.minute_attainment(0, 0.99) >= 0.95
    assert result.decisions > 0


SUBMITTED = 100.0 * 30 * 60  # 100 segments/s of backlog for 30 minutes


@pytest.mark.parametrize(("interactive", "deadline_s", "carried"), [
    (300.0, 86_400.0, (0.0, 0.0)),  # the floor (2 replicas at 50 %) has room: released at once (flat: a trough)
    (900.0, 86_400.0, (SUBMITTED * 0.99, SUBMITTED)),  # no room: it waits, its deadline a day away
    # No room, but due within the window: released 600 s before the deadline (planned each minute), done in
    # time; carried is what was not yet that close to its deadline: submitted in the last 5-6 minutes.
    (900.0, 900.0, (SUBMITTED / 6, SUBMITTED / 4)),
])
def test_deferred_backlog_runs_on_the_floors_spare_capacity_or_by_its_deadline(
        interactive: float, deadline_s: float, carried: tuple[float, float]) -> None:
    trace = flat_trace([interactive] * 30)
    trace.rates["deferrable"][:] = 100.0
    setup = setup_for(trace, clamps={"min_replicas": 2, "max_replicas": 10},
                      backlog={"urgent_s": 600, "deadline_s": deadline_s})
    result = run(setup, StaticPeakConfig(replicas=3), 3)
    assert carried[0] <= result.carried <= carried[1]
    assert result.waits.on_time_share(3) == 1.0
    at_once = run(setup, StaticPeakConfig(replicas=3), 3, defer=False)
    assert at_once.carried == 0 and at_once.waits.on_time_share(3) == 1.0


def test_static_peak_needs_its_replicas_outside_the_simulator() -> None:
    with pytest.raises(ConfigError, match="static-peak: set replicas"):
        StaticPeakPolicy(StaticPeakConfig())


def test_a_malformed_simulation_config_names_the_field(tmp_path: Path) -> None:
    path = tmp_path / "sim.toml"
    path.write_text('[threshold.cpu]\nthreshold = "high"\nstep = 2\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"sim\.toml: threshold\.cpu\.threshold: Input should be a valid number"):
        load_simulation_config(path)
    path.write_text("[kpa]\npanic_threshold = 2.0\npanic_window = 6\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"kpa\.panic_window: Extra inputs are not permitted"):
        load_simulation_config(path)
    path.write_text("[kpa\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid toml"):
        load_simulation_config(path)


def test_peakgate_simulate_prints_the_comparison_and_draws_the_plot(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("at_s,interactive,document\n" + "".join(f"{60 * i},{800 + 40 * i},100\n" for i in range(40)),
                     encoding="utf-8")
    plot = tmp_path / "out.png"
    code = main(["simulate", "--trace", str(trace), "--history-s", "600", "--policy", "predictive", "static-peak",
                 "--quiet", "--plot", str(plot)])
    out = capsys.readouterr().out
    assert code == 0
    assert "| predictive |" in out and "| static-peak |" in out and "| holt-winters | 1 min |" in out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(("args", "message"), [
    (["--trace", "{bad}"], "line 2, field 'interactive': 'x' is not a number"),
    (["--config", "{cfg}"], "clamps.max_replicas: Input should be greater than or equal to 1"),
])
def test_peakgate_simulate_rejects_bad_input_naming_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              args: list[str], message: str) -> None:
    bad, cfg = tmp_path / "bad.csv", tmp_path / "sim.json"
    bad.write_text("at_s,interactive\n0,x\n60,1\n", encoding="utf-8")
    cfg.write_text(json.dumps({"clamps": {"max_replicas": 0}}), encoding="utf-8")
    argv = [a.format(bad=bad, cfg=cfg) for a in args]
    assert main(["simulate", "--quiet", *argv]) == 2
    assert message in capsys.readouterr().err
