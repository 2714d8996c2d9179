"""The surge report on disk: `<name>.json` (the summary), `<name>.md` and its PNGs, side by side.

`<name>` is the profile's, so a 5x and a 10x report can share a folder (docs/surge/).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from peakgate.drills import plots
from peakgate.drills.profile import KIND_CLASS, KINDS
from peakgate.drills.summary import CLASSES


@dataclass(frozen=True, slots=True)
class Written:
    markdown: Path
    summary: Path
    figures: tuple[Path, ...]


def write(summary: dict[str, Any], out_dir: Path, note: str | None = None) -> Written:
    out_dir.mkdir(parents=True, exist_ok=True)
    name = summary["profile"]["name"]
    json_path = out_dir / f"{name}.json"
    json_path.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    figures = []
    for suffix, draw in (("latency", plots.latency), ("throughput", plots.throughput), ("server", plots.server)):
        path = out_dir / f"{name}-{suffix}.png"
        draw(summary, path)
        figures.append(path)
    md_path = out_dir / f"{name}.md"
    md_path.write_text(markdown(summary, [f.name for f in figures], note), encoding="utf-8")
    return Written(md_path, json_path, tuple(figures))


def markdown(summary: dict[str, Any], figures: list[str], note: str | None) -> str:
    p = summary["profile"]
    lines = [
        f"# Surge report: {p['name']} against {summary['target']}",
        "",
        f"Started {summary['started_at']}; seed {summary['seed']}; arrivals for {summary['duration_s']:.0f} s "
        f"(baseline {p['baseline_rps']:g} req/s, peak {p['peak_rps']:g} req/s = {p['multiplier']:g}x), then up to "
        f"{summary['drain_s']:.0f} s of drain; ended after {summary['ended_s']:.1f} s.",
    ]
    if note:
        lines += ["", note]
    lines += ["", "## Headline", "", *_headline(summary), "", *_class_table(summary), "", *_checks(summary),
              "", "## Per phase", "", *_phase_table(summary), "", "## Jobs", "", *_jobs(summary),
              "", "## The server's side", "", *_server(summary), "", "## Figures", ""]
    lines += [f"![{name}]({name})" for name in figures]
    return "\n".join(lines) + "\n"


def headline_text(summary: dict[str, Any]) -> str:
    """A few lines for the terminal: per kind, then the refusals."""
    lines = []
    for label, f in (*((k, summary["kinds"][k]) for k in KINDS), ("all", summary["total"])):
        lines.append(f"{label:<9} offered {f['offered']:>7,} ok {f['accepted']:>7,} shed {f['shed']:>7,} "
                     f"err {f['errors']:>6,} dropped {f['generator_dropped']:>5,}  p50 {_ms(f['p50_s']):>9} "
                     f"p99 {_ms(f['p99_s']):>9}  goodput {_pct(f['goodput_share'])}")
    r = summary["refusals"]
    lines.append(f"refusals {r['total']:,}, with Retry-After {r['with_retry_after']:,}")
    return "\n".join(lines)


def _ms(seconds: float | None) -> str:
    return "–" if seconds is None else f"{seconds * 1000:,.0f} ms"


def _pct(share: float | None) -> str:
    return "–" if share is None else f"{share:.1%}"


_HEAD = ("| {label} | offered | accepted | shed 429/503 | errors | gen-dropped | p50 | p95 | p99 | goodput/s "
         "| goodput share |")


def _row(label: str, f: dict[str, Any]) -> str:
    goodput = "–" if f["goodput_rps"] is None else f"{f['goodput_rps']:.1f}"
    return (f"| {label} | {f['offered']:,} | {f['accepted']:,} | {f['shed_429']:,}/{f['shed_503']:,} "
            f"| {f['errors']:,} | {f['generator_dropped']:,} | {_ms(f['p50_s'])} | {_ms(f['p95_s'])} "
            f"| {_ms(f['p99_s'])} | {goodput} | {_pct(f['goodput_share'])} |")


def _headline(summary: dict[str, Any]) -> list[str]:
    out = [_HEAD.format(label="kind (class)"), "|---" * 11 + "|"]
    out += [_row(f"{k} ({KIND_CLASS[k]})", summary["kinds"][k]) for k in KINDS]
    out.append(_row("**all**", summary["total"]))
    return out


def _class_table(summary: dict[str, Any]) -> list[str]:
    return [_HEAD.format(label="class"), "|---" * 11 + "|",
            *(_row(c, summary["classes"][c]) for c in CLASSES)]


def _checks(summary: dict[str, Any]) -> list[str]:
    r, checks, gen = summary["refusals"], summary["checks"], summary["generator"]
    errors = summary["total"]["errors_by_outcome"]
    return [
        f"- Goodput: a 2xx within {summary['profile']['deadline_s']:g} s of the scheduled arrival. Shed rate "
        f"overall: {_pct(summary['total']['shed_rate'])}.",
        f"- Refusals (429/503, arrivals and job polls): {r['total']:,}, with `Retry-After`: {r['with_retry_after']:,}"
        f" — {'all of them' if checks['all_refusals_had_retry_after'] else '**NOT ALL**'}.",
        f"- Errors by outcome: {', '.join(f'{k}: {v:,}' for k, v in sorted(errors.items())) or 'none'}.",
        f"- Counts add up (offered = accepted + shed + errors + generator-dropped, per kind): "
        f"{'yes' if checks['counts_add_up'] else '**NO**'}.",
        f"- Generator: worst send lag {gen['max_lag_s'] * 1000:.0f} ms behind schedule, {gen['dropped']:,} arrivals "
        f"dropped at its outstanding cap ({'kept up' if checks['generator_kept_up'] else '**fell behind**'}).",
    ]


def _phase_table(summary: dict[str, Any]) -> list[str]:
    out = ["| phase | window s | offered/s (expected) | accepted | shed rate | goodput share | "
           + " | ".join(f"{k} p50 / p99" for k in KINDS) + " |", "|---" * (6 + len(KINDS)) + "|"]
    for name, b in summary["phases"].items():
        window = b["end_s"] - b["start_s"]
        lat = " | ".join(f"{_ms(b['kinds'][k]['p50_s'])} / {_ms(b['kinds'][k]['p99_s'])}" for k in KINDS)
        out.append(f"| {name} | {b['start_s']:.0f}–{b['end_s']:.0f} | {b['offered_rps']:.1f} "
                   f"({b['expected_offered'] / window:.1f}) | {b['accepted']:,} | {_pct(b['shed_rate'])} "
                   f"| {_pct(b['goodput_share'])} | {lat} |")
    return out


def _jobs(summary: dict[str, Any]) -> list[str]:
    out = ["| kind | accepted | done | error | pending at the end | not polled | done after p50 / p99 |",
           "|---" * 7 + "|"]
    for kind in ("document", "batch"):
        j = summary["jobs"][kind]
        out.append(f"| {kind} | {j['accepted']:,} | {j['done']:,} | {j['error']:,} | {j['pending']:,} "
                   f"| {j['untracked']:,} | {_ms(j['done_p50_s'])} / {_ms(j['done_p99_s'])} |")
    every = summary["jobs"]["sample_every"]
    sampled = f"1 in {every} jobs" if every else "no job"
    out += ["", f"{sampled.capitalize()} (over the whole run, both kinds) was polled until done or the drain's end; "
            "'pending' jobs were still queued or running on the server then."]
    return out


def _server(summary: dict[str, Any]) -> list[str]:
    s = summary["server"]
    reasons = ", ".join(f"{k}: {v:,.0f}" for k, v in s["rejected_by_reason"].items()) or "none"
    workers = "not exported (in-process gateway)" if s["workers"] is None else ", ".join(f"{w:g}" for w in s["workers"])
    level = "–" if s["max_degradation"] is None else f"{s['max_degradation']:g}"
    served = "–" if s["segments_served"] is None else f"{s['segments_served']:,.0f}"
    queue = "–" if s["max_queue"] is None else f"{s['max_queue']:,.0f}"
    return [f"From {s['samples']} scrapes of `/metrics` ({s['scrape_failures']} failed):",
            f"- highest degradation level: {level} (0 normal … 4 cache-only batch)",
            f"- segments served: {served}, of which from the cache or the TM: {_pct(s['hit_rate'])}",
            f"- refusals the server counted, by reason: {reasons}",
            f"- most segments queued: {queue}; workers: {workers}"]
