"""The simulator's report: the comparison tables (markdown) and the PNG (matplotlib, Agg backend)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from peakgate.control.forecast_backtest import Backtest
from peakgate.control.simulate_stats import RunResult

STATIC = "static-peak"


def slo_table(runs: Sequence[RunResult], quantile: float) -> str:
    head = ("| policy | interactive SLO minutes | document | batch | backlog by deadline "
            "| p99 wait interactive | document | batch |\n|---|---|---|---|---|---|---|---|")
    rows = []
    for run in runs:
        w = run.waits
        attain = [f"{100 * w.minute_attainment(q, quantile):.2f} % ({w.failing_minutes(q, quantile)} missed)"
                  for q in range(3)]
        backlog = f"{100 * w.on_time_share(3):.1f} %" + (f" ({run.carried:.0f} carried)" if run.carried else "")
        waits = [_seconds(w.quantile_wait_s(q, 0.99)) for q in range(3)]
        rows.append(f"| {run.name} | {' | '.join(attain)} | {backlog} "
                    f"| {' | '.join(waits)} |")
    return "\n".join([head, *rows])


def cost_table(runs: Sequence[RunResult]) -> str:
    static = next((r for r in runs if r.name == STATIC), None)
    head = ("| policy | on-demand part | spot part | spot mix total | all on-demand | spot saving "
            "| vs static-peak (mix / all on-demand) | mean / peak replicas | scale changes | spot interruptions |\n"
            "|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for run in runs:
        total = sum(run.cost.values())
        saving = 1 - total / run.cost_all_on_demand if run.cost_all_on_demand else 0.0
        versus = "—"
        if static is not None:
            versus = (f"{100 * total / sum(static.cost.values()):.0f} % / "
                      f"{100 * run.cost_all_on_demand / static.cost_all_on_demand:.0f} %")
        serving = run.timeline.serving
        rows.append(f"| {run.name} | {run.cost['on-demand']:.2f} | {run.cost['spot']:.2f} | {total:.2f} "
                    f"| {run.cost_all_on_demand:.2f} | {100 * saving:.0f} % | {versus} "
                    f"| {sum(serving) / len(serving):.1f} / {max(serving)} | {run.decisions} "
                    f"| {run.interruptions} |")
    return "\n".join([head, *rows])


def attribution_table(run: RunResult, top: int = 8) -> str:
    """The largest attributed costs of one run, by (model, tier, tenant, endpoint) and market."""
    ranked = sorted(run.attributed.items(), key=lambda item: -item[1])[:top]
    rows = [f"| {k.model} | {k.tier} | {k.tenant} | {k.endpoint} | {market} | {amount:.2f} |"
            for (k, market), amount in ranked]
    return "\n".join(["| model | tier | tenant | endpoint | market | cost |", "|---|---|---|---|---|---|", *rows])


def backtest_table(results: Sequence[Backtest]) -> str:
    rows = [f"| {b.name} | {b.ahead_minutes} min | {b.minutes} | {b.mape_pct:.1f} % | {b.coverage_pct:.1f} % |"
            for b in results]
    return "\n".join(["| forecaster | ahead | minutes | MAPE | under the upper band |", "|---|---|---|---|---|", *rows])


def _seconds(value: float) -> str:
    if value == float("inf"):
        return "unserved"
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.1f} s"


def plot(runs: Sequence[RunResult], path: Path, title: str, start_h: float = 0.0) -> None:
    import matplotlib

    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt

    fig, (load, replicas, market) = plt.subplots(3, 1, figsize=(11, 10), sharex=True)
    hours = [start_h + m / 60 for m in range(runs[0].minutes)]
    load.plot(hours, runs[0].timeline.arrivals_per_s, color="black", lw=1,
              label=f"work entering the queues ({runs[0].name}; backlog when released)")
    for run in runs:
        replicas.plot(hours, run.timeline.serving, lw=1.2, label=run.name)
        if run.name.startswith("predictive"):
            load.plot(hours, run.timeline.forecast_upper_per_s, lw=0.8, ls="--", label=f"upper band ({run.name})")
    first = next((r for r in runs if r.name == "predictive"), runs[0])
    market.stackplot(hours, first.timeline.on_demand, first.timeline.spot, labels=["on-demand", "spot"],
                     colors=["#4c72b0", "#dd8452"])
    load.set_ylabel("segments/s")
    replicas.set_ylabel("serving replicas")
    market.set_ylabel(f"billed instances ({first.name})")
    market.set_xlabel("hour (from the first day's midnight)")
    for axis in (load, replicas, market):
        axis.legend(loc="upper right", fontsize=8)
        axis.grid(alpha=0.3)
    load.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

