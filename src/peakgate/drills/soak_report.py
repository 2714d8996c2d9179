"""The soak report on disk: `soak-<start>.json` (every sample and the fits), `.md` and one PNG, side by side."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from peakgate.drills.plots import none_as_nan, pyplot, save_figure

_MB = 1024 * 1024


def write(data: dict[str, Any], out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = out_dir / f"soak-{data['started_at'][:19].replace(':', '')}"
    json_path, md_path, png_path = stem.with_suffix(".json"), stem.with_suffix(".md"), stem.with_suffix(".png")
    json_path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    figure(data, png_path)
    md_path.write_text(markdown(data, png_path.name), encoding="utf-8")
    return [json_path, md_path, png_path]


def headline(data: dict[str, Any]) -> str:
    parts = []
    for key in ("gateway", "engines"):
        block = data[key]
        if "rss_mb" in block:
            parts.append(f"{key} RSS {block['rss_mb']['slope_per_h']:+.1f} MB/h "
                         f"({block['rss_mb']['verdict']}), fds {block['open_fds']['slope_per_h']:+.1f}/h "
                         f"({block['open_fds']['verdict']})")
        else:
            parts.append(f"{key}: {block.get('reason', 'no samples')}")
    return "; ".join(parts)


def markdown(data: dict[str, Any], png: str) -> str:
    load = data["load"]
    lines = [f"# Soak — {data['verdict']}", "",
             f"Started {data['started_at']} against {data['target']}: {data['rps']:g} req/s (the surge mix) for "
             f"{data['duration_s']:.0f} s, a sample every {data['sample_s']:g} s ({len(data['points'])} samples).",
             "", "Machine: " + ", ".join(f"{k} {v}" for k, v in data["machine"].items())]
    if data["note"]:
        lines += ["", f"Note: {data['note']}"]
    lines += ["", f"Load: offered {load['offered']}, accepted {load['accepted']}, shed {load['shed']}, "
              f"errors {load['errors']}, generator-dropped {load['generator_dropped']}.", "",
              "| series | first | last | slope | projected over horizon | limit | R² | verdict |",
              "|---|---|---|---|---|---|---|---|"]
    for key in ("gateway", "engines"):
        lines += _rows(data, key)
    fitted = data["gateway"]
    span = f" ({fitted['kept']} samples over {fitted['span_s']:.0f} s)" if "span_s" in fitted else ""
    lines += ["", f"A least-squares line after the warm-up (the first 20 % of samples){span}; PASS needs the "
              "projected growth plus two standard errors under the limit, FAIL the projection minus two over it, "
              f"anything between is INCONCLUSIVE, and so is a fit spanning under {data['min_span_s']:g} s.", "",
              f"![soak]({png})"]
    return "\n".join(lines) + "\n"


def _rows(data: dict[str, Any], key: str) -> list[str]:
    block = data[key]
    if "rss_mb" not in block:
        return [f"| {key} | - | - | - | - | - | - | {block['verdict']} ({block.get('reason', 'no samples')}) |"]
    # The engines' block pairs the children's RSS with the open fds of the whole tree (gateway included).
    rss_field, fds_field = ("rss_bytes", "open_fds") if key == "gateway" else ("engine_rss_bytes", "tree_fds")
    rss_label, fds_label = ("gateway RSS", "gateway open fds") if key == "gateway" else (
        "engines (children) RSS", "gateway + children open fds")
    values = [(p[rss_field], p[fds_field]) for p in data["points"] if p[rss_field] is not None]
    rows = []
    for label, index, fit, unit, scale in ((rss_label, 0, block["rss_mb"], " MB", _MB),
                                           (fds_label, 1, block["open_fds"], "", 1)):
        first, last = values[0][index] / scale, values[-1][index] / scale
        rows.append(f"| {label} | {first:.1f}{unit} | {last:.1f}{unit} | {fit['slope_per_h']:+.2f}{unit}/h | "
                    f"{fit['projected_growth']:+.1f}{unit} over {block['horizon_h']:g} h | {fit['limit']:.0f}{unit} | "
                    f"{fit['r2']:.2f} | {fit['verdict']} |")
    return rows


def figure(data: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    points = data["points"]
    ts = [p["t_s"] for p in points]
    fig, (rss, fds, cpu) = plt.subplots(3, 1, figsize=(9.0, 6.0), sharex=True)
    rss.plot(ts, none_as_nan([_mb(p["rss_bytes"]) for p in points]), color="tab:blue", label="gateway")
    rss.plot(ts, none_as_nan([_mb(p["engine_rss_bytes"]) for p in points]), color="tab:orange",
             label="engines (children)")
    for key, colour in (("gateway", "tab:blue"), ("engines", "tab:orange")):
        fit = data[key].get("rss_mb")
        if fit and ts:
            start = ts[int(len(ts) * 0.2)]  # soak_analysis's default warm-up
            rss.plot([start, ts[-1]], [fit["intercept"] + fit["slope_per_h"] * t / 3600 for t in (start, ts[-1])],
                     color=colour, linestyle="--", linewidth=0.8)
    rss.set_ylabel("RSS (MB)")
    rss.legend(fontsize=7, loc="upper left")
    rss.set_title(f"Soak at {data['rps']:g} req/s: memory (dashed: fitted slope), open files, CPU", fontsize=10)
    fds.plot(ts, none_as_nan([p["open_fds"] for p in points]), color="tab:blue", label="gateway")
    fds.plot(ts, none_as_nan([p["tree_fds"] for p in points]), color="tab:orange", label="gateway + children")
    fds.set_ylabel("open fds")
    fds.legend(fontsize=7, loc="upper left")
    cpu.plot(ts[1:], none_as_nan(_cpu_percent(points)), color="tab:green")
    cpu.set_ylabel("gateway CPU (%)")
    cpu.set_xlabel("time (s)")
    save_figure(plt, fig, path)


def _mb(value: float | None) -> float | None:
    return None if value is None else value / _MB


def _cpu_percent(points: list[dict[str, Any]]) -> list[float | None]:
    out: list[float | None] = []
    for a, b in itertools.pairwise(points):
        dt = b["t_s"] - a["t_s"]
        ok = a["cpu_s"] is not None and b["cpu_s"] is not None and dt > 0
        out.append(100.0 * (b["cpu_s"] - a["cpu_s"]) / dt if ok else None)
    return out
