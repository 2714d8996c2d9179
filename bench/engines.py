"""Throughput of every model through the real peakgate backends: sentences/s at batch sizes 1, 8, 32.

    python -m bench.engines [--sentences 256] [--rounds 3] [--batch-sizes 1,8,32] [--explore]

Beam 1 (the interactive class). en→x models read the dev set's English column, es→en models its Spanish
column. Every model is started (and warmed) first; then each round times every (batch size, model) cell,
alternating the model order from round to round so int8 and fp32 see the same machine. Each cell reports the
median of the rounds; the int8/fp32 ratio is the median of the per-round paired ratios (goal >= 1.3 at batch 32).
CTranslate2 threads come from each ModelConfig (intra_threads 2, inter_threads 1 by default).

`--explore` adds a student-only grid (compute types int8 / int8_float32 / float32, intra_threads 1 and 2) at
the largest batch size, to see where the int8 speed-up comes from (or goes).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):  # `python bench/engines.py`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import (
    FP32_MODEL,
    INT8_MODEL,
    cpu_info,
    default_dev_path,
    load_dev,
    render_table,
    select_models,
    translate_all,
)
from peakgate.backends.base import Backend, DecodeOptions
from peakgate.backends.factory import build_backend
from peakgate.config import REPO_MODELS_DIR, ModelConfig

RATIO_GOAL = 1.3
BEAM = 1  # the interactive class


@dataclass(frozen=True, slots=True)
class Cell:
    model: str
    batch_size: int
    rates: tuple[float, ...]  # sentences/s per round

    @property
    def median(self) -> float:
        return statistics.median(self.rates)


def paired_ratio(a: Sequence[float], b: Sequence[float]) -> float:
    """Median over rounds of a[i] / b[i] (same round, same machine state)."""
    return statistics.median(x / y for x, y in zip(a, b, strict=True) if y > 0)


def sentences_for(config: ModelConfig, rows: Sequence[tuple[str, str]], n: int) -> list[str]:
    column = [en if config.source == "en" else es for en, es in rows]
    if not column:
        raise ValueError("no dev sentences")
    return [column[i % len(column)] for i in range(n)]


async def time_cell(backend: Backend, config: ModelConfig, segments: Sequence[str], batch_size: int) -> float:
    options = DecodeOptions(beam_size=BEAM)
    t0 = time.perf_counter()
    await translate_all(backend, segments, config.source, config.target, options=options, batch_size=batch_size)
    return len(segments) / (time.perf_counter() - t0)


async def warm_up(backend: Backend, config: ModelConfig, segments: Sequence[str], batch_sizes: Sequence[int]) -> None:
    options = DecodeOptions(beam_size=BEAM)
    for bs in batch_sizes:
        await translate_all(backend, segments[: max(bs, 8)], config.source, config.target,
                            options=options, batch_size=bs)


async def bench(configs: Sequence[ModelConfig], rows: Sequence[tuple[str, str]], n: int, rounds: int,
                *, batch_sizes: Sequence[int], models_dir: Path = REPO_MODELS_DIR,
                progress: bool = False) -> dict[tuple[str, int], Cell]:
    """Start every model, warm up, then `rounds` interleaved rounds of every (batch size, model) cell."""
    rates: dict[tuple[str, int], list[float]] = {(c.name, bs): [] for c in configs for bs in batch_sizes}
    async with contextlib.AsyncExitStack() as stack:
        backends: dict[str, Backend] = {}
        for config in configs:
            backend = build_backend(config, models_dir)
            await backend.start()
            stack.push_async_callback(backend.close)
            backends[config.name] = backend
        segments = {c.name: sentences_for(c, rows, n) for c in configs}
        for config in configs:
            await warm_up(backends[config.name], config, segments[config.name], batch_sizes)
        for r in range(rounds):
            order = list(configs) if r % 2 == 0 else list(reversed(configs))
            for bs in batch_sizes:
                for config in order:
                    rate = await time_cell(backends[config.name], config, segments[config.name], bs)
                    rates[(config.name, bs)].append(rate)
            if progress:
                print(f"  round {r + 1}/{rounds} done", file=sys.stderr, flush=True)
    return {key: Cell(key[0], key[1], tuple(v)) for key, v in rates.items()}


def throughput_table(configs: Sequence[ModelConfig], cells: dict[tuple[str, int], Cell],
                     batch_sizes: Sequence[int]) -> str:
    headers = ["model", "engine", "precision", "threads", *(f"bs{bs} sent/s" for bs in batch_sizes),
               "spread bs" + str(batch_sizes[-1])]
    out_rows: list[list[object]] = []
    for c in configs:
        threads = f"{c.intra_threads}x{c.inter_threads}" if c.engine == "ctranslate2" else f"{c.pipelines} pipe"
        last = cells[(c.name, batch_sizes[-1])].rates
        spread = f"{min(last):.0f}-{max(last):.0f}"
        out_rows.append([c.name, c.engine, c.precision, threads,
                         *(round(cells[(c.name, bs)].median, 1) for bs in batch_sizes), spread])
    return render_table(headers, out_rows, digits=1)


def ratio_lines(cells: dict[tuple[str, int], Cell], batch_sizes: Sequence[int], fast: str = INT8_MODEL,
                slow: str = FP32_MODEL) -> tuple[list[str], float | None]:
    """One line per batch size; returns the ratio at the largest batch size too."""
    lines: list[str] = []
    last: float | None = None
    for bs in batch_sizes:
        a, b = cells.get((fast, bs)), cells.get((slow, bs))
        if a is None or b is None:
            continue
        ratio = paired_ratio(a.rates, b.rates)
        rounds = ", ".join(f"{x / y:.2f}" for x, y in zip(a.rates, b.rates, strict=True))
        lines.append(f"int8/fp32 at batch {bs}: {ratio:.2f}x (per round: {rounds}; "
                     f"medians {a.median:.1f} / {b.median:.1f})")
        last = ratio
    return lines, last


def explore_configs(base: ModelConfig, fp32: ModelConfig | None) -> list[ModelConfig]:
    import ctranslate2

    supported = ctranslate2.get_supported_compute_types("cpu")
    variants: list[ModelConfig] = []
    for threads in (1, 2):
        for compute_type, source in (("int8", base), ("int8_float32", base), ("float32", fp32 or base)):
            if compute_type not in supported:
                continue
            name = f"{source.name}[{compute_type},t{threads}]"
            variants.append(source.model_copy(update={"name": name, "compute_type": compute_type,
                                                      "intra_threads": threads}))
    return variants


def _ints(text: str) -> list[int]:
    values = [int(v) for v in text.split(",") if v.strip()]
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError("expected positive integers, e.g. 1,8,32")
    return values


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.engines", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dev", type=Path, default=default_dev_path())
    p.add_argument("--sentences", type=int, default=256, help="sentences per cell (dev rows, cycled if needed)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--batch-sizes", type=_ints, default=[1, 8, 32])
    p.add_argument("--models", default=None, help="comma-separated model names (default: every model)")
    p.add_argument("--explore", action="store_true", help="also the student compute-type x threads grid")
    return p.parse_args(argv)


def _load() -> str:
    with contextlib.suppress(OSError):
        return " ".join(f"{v:.2f}" for v in os.getloadavg())
    return "?"


async def run(args: argparse.Namespace) -> int:
    dev = load_dev(args.dev)
    rows = [(r.en, r.es) for r in dev]
    names = args.models.split(",") if args.models else None
    configs = select_models(names=names)
    print(cpu_info())
    print(f"{args.sentences} sentences per cell, beam {BEAM}, {args.rounds} interleaved rounds "
          f"(median); load average before: {_load()}")
    cells = await bench(configs, rows, args.sentences, args.rounds, batch_sizes=args.batch_sizes, progress=True)
    print()
    print(throughput_table(configs, cells, args.batch_sizes))
    print()
    lines, at_last = ratio_lines(cells, args.batch_sizes)
    for line in lines:
        print(line)
    if at_last is not None:
        verdict = "meets" if at_last >= RATIO_GOAL else "BELOW"
        print(f"int8/fp32 at batch {args.batch_sizes[-1]}: {at_last:.2f}x {verdict} the {RATIO_GOAL}x goal")

    if args.explore:
        base = next((c for c in configs if c.name == INT8_MODEL), None)
        fp32 = next((c for c in configs if c.name == FP32_MODEL), None)
        if base is None:
            print("--explore needs the int8 student")
        else:
            grid = explore_configs(base, fp32)
            bs = [args.batch_sizes[-1]]
            print(f"\nexplore: students at batch {bs[0]}, beam {BEAM}")
            grid_cells = await bench(grid, rows, args.sentences, args.rounds, batch_sizes=bs, progress=True)
            print(render_table(["variant", "compute_type", "intra_threads", f"bs{bs[0]} sent/s", "rounds"],
                               [[g.name, g.compute_type, g.intra_threads, round(grid_cells[(g.name, bs[0])].median, 1),
                                 " ".join(f"{x:.0f}" for x in grid_cells[(g.name, bs[0])].rates)] for g in grid],
                               digits=1))
    print(f"\nload average after: {_load()}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return asyncio.run(run(parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
