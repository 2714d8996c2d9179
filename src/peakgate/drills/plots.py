"""The surge report's figures, drawn from the summary's timeline (matplotlib, Agg backend: files only).

Small on purpose (a few tens of KB each): they are committed with the report.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from peakgate.drills.profile import KINDS

if TYPE_CHECKING:
    from matplotlib.axes import Axes

_SIZE = (9.0, 3.6)
_DPI = 80
_COLOURS = {"short": "tab:blue", "long": "tab:purple", "repeated": "tab:green", "document": "tab:orange",
            "batch": "tab:brown"}


def pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # no display: the report is written on servers and in CI
    import matplotlib.pyplot as plt

    return plt


def _phases(ax: Axes, summary: dict[str, Any]) -> None:
    """Shade the hold and mark each phase's start, so every figure reads against the surge's shape."""
    for name, block in summary["phases"].items():
        if name == "hold":
            ax.axvspan(block["start_s"], block["end_s"], color="0.92", zorder=0)
        ax.axvline(block["start_s"], color="0.6", linewidth=0.6, zorder=0)


def latency(summary: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    line = summary["timeline"]
    fig, ax = plt.subplots(figsize=_SIZE)
    _phases(ax, summary)
    for kind in KINDS:
        series = line["kinds"][kind]
        ax.plot(line["t_s"], none_as_nan(series["p99_s"]), color=_COLOURS[kind], linewidth=1.2, label=f"{kind} p99")
        ax.plot(line["t_s"], none_as_nan(series["p50_s"]), color=_COLOURS[kind], linewidth=0.8, linestyle=":")
    ax.axhline(summary["profile"]["deadline_s"], color="red", linewidth=0.8, linestyle="--", label="deadline")
    ax.set_yscale("log")
    ax.set_xlabel("arrival time (s); grey: hold at peak")
    ax.set_ylabel("latency of 2xx (s)")
    ax.set_title("Latency per kind (solid p99, dotted p50), by second of arrival")
    ax.legend(fontsize=7, ncol=3, loc="upper left")
    save_figure(plt, fig, path)


def throughput(summary: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    line = summary["timeline"]
    fig, (over_time, vs_load) = plt.subplots(1, 2, figsize=_SIZE, width_ratios=(2, 1))
    _phases(over_time, summary)
    over_time.plot(line["t_s"], line["profile_rps"], color="black", linewidth=0.8, linestyle="--",
                   label="profile rate")
    for key, colour in (("offered", "0.4"), ("accepted", "tab:green"), ("shed", "tab:orange"), ("errors", "tab:red")):
        over_time.plot(line["t_s"], line[key], color=colour, linewidth=1.0, label=key)
    over_time.set_xlabel("arrival time (s)")
    over_time.set_ylabel("requests per second")
    over_time.legend(fontsize=7, loc="upper left")
    vs_load.scatter(line["offered"], line["accepted"], s=6, color="tab:green", label="accepted")
    peak = max(line["offered"], default=1) or 1
    vs_load.plot([0, peak], [0, peak], color="0.6", linewidth=0.6, linestyle="--")
    vs_load.set_xlabel("offered per second")
    vs_load.set_ylabel("accepted per second")
    vs_load.set_title("Throughput vs offered load", fontsize=9)
    save_figure(plt, fig, path)


def server(summary: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    line, series = summary["timeline"], summary["timeline"]["server"]
    fig, axes = plt.subplots(4, 1, figsize=(_SIZE[0], 6.0), sharex=True)
    shed_rate = [s / o if o else None for s, o in zip(line["shed"], line["offered"], strict=True)]
    panels = (
        (axes[0], line["t_s"], shed_rate, "shed rate", "tab:orange"),
        (axes[1], series["t_s"], series["hit_rate"], "cache/TM hit rate", "tab:green"),
        (axes[2], series["t_s"], series["degradation"], "degradation level", "tab:red"),
        (axes[3], series["t_s"], series["queue"], "queued segments", "tab:blue"),
    )
    for ax, xs, ys, label, colour in panels:
        _phases(ax, summary)
        ax.plot(xs, none_as_nan(ys), color=colour, linewidth=1.0, drawstyle="steps-post")
        ax.set_ylabel(label, fontsize=8)
    workers = [w for w in series["workers"] if w is not None]
    if workers:
        twin = axes[3].twinx()
        twin.plot(series["t_s"], none_as_nan(series["workers"]), color="0.3", linewidth=0.8, linestyle="--")
        twin.set_ylabel("ready workers", fontsize=8)
    else:
        axes[3].text(0.99, 0.9, "workers: not exported (in-process gateway)", transform=axes[3].transAxes,
                     ha="right", va="top", fontsize=7)
    axes[2].set_ylim(-0.2, 4.2)
    axes[-1].set_xlabel("time (s): arrivals for the shed rate, scrapes for the server's series")
    fig.suptitle("The target's side: shedding, reuse, degradation, queue", fontsize=10)
    save_figure(plt, fig, path)


def none_as_nan(values: list[float | None]) -> list[float]:
    return [float("nan") if v is None else v for v in values]


def save_figure(plt: Any, fig: Any, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=_DPI)
    plt.close(fig)
