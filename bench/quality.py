"""Dev-set quality of every en→es model and tier through the real peakgate backends, plus checks.

    python -m bench.quality [--beams 1,2,4] [--guards both] [--tiers] [--speed-rounds 5] [--heldout 400]
                            [--write-manifest]

- Models: model, engine, precision, decoding guards (off / on: `ModelConfig`'s served values), beam, dev chrF
  and BLEU (sacrebleu defaults), probe-set chrF (bench/data/probe.en-es.tsv: 50 everyday sentences, greetings,
  questions and labels with human references), seconds, sentences/s. The served classes decode with beam 1
  (interactive, batch) and beam 2 (document); beam 4 is the reference figure. Apertium has no search: beam "-".
- Tiers (`--tiers`): each tier's primary engine alone, and with quality estimation and its fallback engine
  (bench/quality_tiers.py); probe outputs equal to their input, or looping, are counted.
- Speed (`--speed-rounds N`): guards off vs on, interleaved rounds in the same run.
- Held-out check (`--heldout N`): the tier table again on N pairs of the held-out catalogs the dev set does not
  use, a check on the thresholds tuned on the dev set (never tuned on).
- Apertium == CLI: ApertiumBackend's output must equal `apertium -u eng-spa`, sentence by sentence.
- Gate: int8 chrF must not be more than 1.0 below fp32 chrF at any beam measured (guards on and off alike).
  Exit 1 when it fails, exit 2 when only the Apertium check fails, 0 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):  # `python bench/quality.py`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sacrebleu

from bench import quality_tiers as tiers
from bench._common import (
    BATCH_SIZE,
    CLASS_BEAMS,
    FP32_MODEL,
    INT8_MODEL,
    REPO_ROOT,
    cpu_info,
    default_dev_path,
    file_sha256,
    heldout_catalogs,
    load_dev,
    render_table,
    select_models,
    started,
    translate_all,
)
from peakgate.backends.base import DecodeOptions
from peakgate.config import REPO_MODELS_DIR, ModelConfig
from peakgate.resilience.degrade import int8_twins

GATE_TOLERANCE_CHRF = 1.0
MANIFEST = REPO_MODELS_DIR / "student-en-es.manifest.json"
PROBE = REPO_ROOT / "bench" / "data" / "probe.en-es.tsv"
HEADERS = ("model", "engine", "precision", "guards", "beam", "chrF", "BLEU", "probe chrF", "seconds", "sent/s")


@dataclass(frozen=True, slots=True)
class QualityRow:
    model: str
    engine: str
    precision: str
    beam: int | None  # None: the engine has no beam search
    chrf: float
    bleu: float
    seconds: float
    sentences: int
    guards: bool | None = True  # None: the engine has none
    probe_chrf: float | None = None

    @property
    def sent_per_s(self) -> float:
        return self.sentences / self.seconds if self.seconds > 0 else float("inf")

    def cells(self) -> tuple[object, ...]:
        beam = "-" if self.beam is None else str(self.beam)
        guards = "-" if self.guards is None else ("on" if self.guards else "off")
        probe = "-" if self.probe_chrf is None else self.probe_chrf
        return (self.model, self.engine, self.precision, guards, beam, self.chrf, self.bleu, probe, self.seconds,
                self.sent_per_s)


@dataclass(frozen=True, slots=True)
class GateResult:
    passed: bool
    lines: list[str] = field(default_factory=list)


def score(hypotheses: Sequence[str], references: Sequence[str]) -> tuple[float, float]:
    """(chrF, BLEU) with sacrebleu defaults (chrF2 char order 6; BLEU 13a tokenisation)."""
    chrf = sacrebleu.corpus_chrf(list(hypotheses), [list(references)]).score
    bleu = sacrebleu.corpus_bleu(list(hypotheses), [list(references)]).score
    return float(chrf), float(bleu)


def metric_signatures() -> dict[str, str]:
    """The sacrebleu signatures of the default metrics (they only exist once a metric has scored something)."""
    chrf, bleu = sacrebleu.metrics.CHRF(), sacrebleu.metrics.BLEU()
    chrf.corpus_score(["a"], [["a"]])
    bleu.corpus_score(["a"], [["a"]])
    return {"chrf": str(chrf.get_signature()), "bleu": str(bleu.get_signature())}


def chrf_by_model(rows: Sequence[QualityRow], *, guards: bool | None = True) -> dict[str, dict[int, float]]:
    out: dict[str, dict[int, float]] = {}
    for row in rows:
        if row.beam is not None and row.guards is guards:
            out.setdefault(row.model, {})[row.beam] = row.chrf
    return out


def gate(chrf: Mapping[str, Mapping[int, float]], *, int8: str = INT8_MODEL, fp32: str = FP32_MODEL,
         tolerance: float = GATE_TOLERANCE_CHRF) -> GateResult:
    """Pure: pass iff int8 chrF >= fp32 chrF - tolerance at every beam both were measured at (and there is one)."""
    a, b = chrf.get(int8, {}), chrf.get(fp32, {})
    beams = sorted(set(a) & set(b))
    if not beams:
        return GateResult(False, [f"no beam measured for both {int8} and {fp32}: nothing to compare"])
    lines: list[str] = []
    passed = True
    for beam in beams:
        delta = a[beam] - b[beam]
        ok = delta >= -tolerance
        passed &= ok
        lines.append(f"beam {beam}: int8 {a[beam]:.2f} - fp32 {b[beam]:.2f} = {delta:+.2f} chrF "
                     f"({'ok' if ok else 'FAIL'}, floor -{tolerance:.1f})")
    return GateResult(passed, lines)


async def measure(config: ModelConfig, sources: Sequence[str], references: Sequence[str], beams: Sequence[int],
                  batch_size: int = BATCH_SIZE, *, probe: tiers.EvalSet | None = None,
                  guards: bool = True) -> tuple[list[QualityRow], dict[int | None, list[str]]]:
    """Rows and hypotheses (keyed by beam; None for engines without search) for one model; `guards` False:
    a CTranslate2 model decodes without its decoding guards."""
    rows: list[QualityRow] = []
    hyps: dict[int | None, list[str]] = {}
    searchable = config.engine == "ctranslate2"
    async with started(config if guards or not searchable else tiers.unguarded(config)) as backend:
        for beam in beams if searchable else [1]:
            options = DecodeOptions(beam_size=beam)
            t0 = time.perf_counter()
            out = await translate_all(backend, sources, config.source, config.target,
                                      options=options, batch_size=batch_size)
            seconds = time.perf_counter() - t0
            chrf, bleu = score(out, references)
            probe_chrf = None
            if probe is not None:
                probe_out = await translate_all(backend, probe.sources, config.source, config.target,
                                                options=options, batch_size=batch_size)
                probe_chrf = score(probe_out, probe.references)[0]
            key = beam if searchable else None
            hyps[key] = out
            rows.append(QualityRow(config.name, config.engine, config.precision, key, chrf, bleu, seconds,
                                   len(sources), guards if searchable else None, probe_chrf))
    return rows, hyps


async def apertium_cli(sentences: Sequence[str], mode: str, *, how: str = "sentence",
                       jobs: int | None = None) -> list[str]:
    """`apertium -u MODE` on each sentence (one process per sentence, `jobs` at a time), or on the whole
    newline-separated file (`how="file"`: faster, but the tagger and transfer then see across lines)."""
    async def run(text: str) -> str:
        proc = await asyncio.create_subprocess_exec(
            "apertium", "-u", mode, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await proc.communicate(text.encode())
        if proc.returncode != 0:
            raise RuntimeError(f"apertium -u {mode} failed ({proc.returncode}): {err.decode(errors='replace')}")
        return out.decode()

    if how == "file":
        lines = (await run("".join(s + "\n" for s in sentences))).split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if len(lines) != len(sentences):
            raise RuntimeError(f"apertium CLI returned {len(lines)} lines for {len(sentences)} sentences")
        return lines
    sem = asyncio.Semaphore(jobs or os.cpu_count() or 1)

    async def one(text: str) -> str:
        async with sem:
            return await run(text)  # the exact segment, no newline added: same input the backend gets

    return list(await asyncio.gather(*(one(s) for s in sentences)))


@dataclass(frozen=True, slots=True)
class CliCheck:
    equal: int
    total: int
    chrf_backend: float
    chrf_cli: float
    diffs: list[tuple[str, str, str]]  # (source, backend, cli)

    @property
    def passed(self) -> bool:
        return self.equal == self.total

    def line(self) -> str:
        return (f"apertium backend == CLI: {self.equal}/{self.total}, "
                f"chrF {self.chrf_backend:.2f} {'==' if self.passed else '!='} {self.chrf_cli:.2f}")


def compare_cli(sources: Sequence[str], backend_out: Sequence[str], cli_out: Sequence[str],
                references: Sequence[str]) -> CliCheck:
    diffs = [(s, b, c) for s, b, c in zip(sources, backend_out, cli_out, strict=True) if b != c]
    return CliCheck(len(sources) - len(diffs), len(sources), score(backend_out, references)[0],
                    score(cli_out, references)[0], diffs)


def manifest_scores(rows: Sequence[QualityRow], dev_path: Path, n_sentences: int, catalogs: Sequence[str],
                    *, gate_result: GateResult, batch_size: int, cli: CliCheck | None) -> dict[str, object]:
    models: dict[str, dict[str, object]] = {}
    baseline: dict[str, dict[str, object]] = {}
    for row in rows:
        entry = {"chrf": round(row.chrf, 2), "bleu": round(row.bleu, 2), "sent_per_s": round(row.sent_per_s, 1)}
        if row.beam is None:
            baseline[row.model] = {"engine": row.engine, **entry}
        else:
            models.setdefault(row.model, {"precision": row.precision})[f"beam{row.beam}"] = entry
    scores: dict[str, object] = {
        "dev_set": dev_path.name,
        "dev_set_sha256": file_sha256(dev_path),
        "sentences": n_sentences,
        "catalogs": sorted(catalogs),
        "date": dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
        "measured_with": f"python -m bench.quality (peakgate backends, batch {batch_size}, "
                         f"max_decoding_length {DecodeOptions().max_decoding_length})",
        "metrics": metric_signatures(),
        "served_beams": CLASS_BEAMS,
        "models": models,
        "baseline": baseline,
        "gate": {"rule": f"int8 chrF >= fp32 chrF - {GATE_TOLERANCE_CHRF} at every beam measured",
                 "passed": gate_result.passed},
    }
    if cli is not None:
        scores["apertium_backend_equals_cli"] = f"{cli.equal}/{cli.total}"
    return scores


def write_manifest(path: Path, scores: Mapping[str, object]) -> None:
    """Replace only the "scores" field; everything else (and key order) stays as it is."""
    text = path.read_text(encoding="utf-8")
    data = json.loads(text)
    data["scores"] = scores
    out = json.dumps(data, indent=2, ensure_ascii=False)
    path.write_text(out + ("\n" if text.endswith("\n") else ""), encoding="utf-8")


def _beams(text: str) -> list[int]:
    beams = sorted({int(b) for b in text.split(",") if b.strip()})
    if not beams or min(beams) < 1:
        raise argparse.ArgumentTypeError("beams must be positive integers, e.g. 1,2,4")
    return beams


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.quality", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dev", type=Path, default=default_dev_path(), help="dev TSV: catalog, en, es (no header)")
    p.add_argument("--probe", type=Path, default=PROBE, help="probe TSV (category, en, es); '' to skip")
    p.add_argument("--limit", type=int, default=None, help="only the first N dev rows")
    p.add_argument("--beams", type=_beams, default=[1, 2, 4],
                   help="beam sizes for the CTranslate2 models (default 1,2,4: interactive, document, reference)")
    p.add_argument("--beam", type=int, default=None, help="a single beam size (overrides --beams)")
    p.add_argument("--guards", choices=("both", "on", "off"), default="both",
                   help="CTranslate2 decoding guards: measure without and with them (default), or one")
    p.add_argument("--tiers", action="store_true", help="the tier table: quality estimation and fallback off / on")
    p.add_argument("--speed-rounds", type=int, default=0, help="guards off vs on, interleaved rounds (0: skip)")
    p.add_argument("--heldout", type=int, default=0,
                   help="also run the tier table on N pairs of the held-out catalogs outside the dev set")
    p.add_argument("--batch-size", type=int, default=BATCH_SIZE)
    p.add_argument("--models", default=None, help="comma-separated model names (default: every en→es model)")
    p.add_argument("--cli", choices=("sentence", "file", "skip"), default="sentence",
                   help="Apertium == CLI check: one CLI call per sentence (default), whole file, or skip")
    p.add_argument("--show-diffs", type=int, default=5, help="how many Apertium/CLI differences to print")
    p.add_argument("--write-manifest", action="store_true", help=f"write the scores into {MANIFEST.name}")
    p.add_argument("--manifest", type=Path, default=MANIFEST)
    args = p.parse_args(argv)
    if args.beam is not None:
        args.beams = _beams(str(args.beam))
    return args


async def measure_models(args: argparse.Namespace, configs: Sequence[ModelConfig], dev: tiers.EvalSet,
                         probe: tiers.EvalSet | None) -> tuple[list[QualityRow], dict[str, list[str]], list[str]]:
    """Every model's rows (CTranslate2 ones without and/or with the guards), Apertium's outputs, failures."""
    rows: list[QualityRow] = []
    apertium_out: dict[str, list[str]] = {}
    failures: list[str] = []
    guard_settings = {"both": (False, True), "on": (True,), "off": (False,)}[args.guards]
    for config in configs:
        for guards in guard_settings if config.engine == "ctranslate2" else (True,):
            try:
                model_rows, hyps = await measure(config, dev.sources, dev.references, args.beams, args.batch_size,
                                                 probe=probe, guards=guards)
            except Exception as exc:  # report and carry on: the gate then fails if a student is missing
                failures.append(f"{config.name}: {type(exc).__name__}: {exc}")
                continue
            rows.extend(model_rows)
            if config.engine == "apertium":
                apertium_out[config.name] = hyps[None]
    return rows, apertium_out, failures


def gate_all(rows: Sequence[QualityRow], students: Sequence[tuple[str, str]]) -> GateResult:
    """The int8 >= fp32 - 1 chrF gate for each student's (int8, fp32) pair and each guard setting measured."""
    results = [(g, int8, gate(chrf, int8=int8, fp32=fp32)) for g in (False, True)
               if (chrf := chrf_by_model(rows, guards=g)) for int8, fp32 in students]
    if not results:
        return gate({})
    lines = [f"guards {'on' if g else 'off'}: {int8}: {line}" for g, int8, r in results for line in r.lines]
    return GateResult(all(r.passed for _, _, r in results), lines)


async def run(args: argparse.Namespace) -> int:
    rows_dev = load_dev(args.dev, args.limit)
    dev = tiers.EvalSet.of(rows_dev)
    catalogs = sorted({r.catalog for r in rows_dev})
    heldout = heldout_catalogs(args.dev)
    print(cpu_info())
    print(f"dev set: {args.dev} ({len(rows_dev)} rows, catalogs {catalogs})")
    if heldout is not None:
        outside = sorted(set(catalogs) - heldout)
        print(f"  held-out catalogs: {'all dev catalogs are held out' if not outside else f'NOT held out: {outside}'}")
    print(f"batch size {args.batch_size}; served beams: {CLASS_BEAMS} (beam 4 = reference)")
    probe = tiers.EvalSet.of(load_dev(args.probe)) if str(args.probe) and args.probe.is_file() else None

    configs = select_models("en", "es", args.models.split(",") if args.models else None)
    rows, apertium_out, failures = await measure_models(args, configs, dev, probe)
    print()
    print(render_table(HEADERS, [r.cells() for r in rows]))
    for failure in failures:
        print(f"UNAVAILABLE {failure}")

    cli = None if args.cli == "skip" else await check_cli(args, configs, apertium_out, dev.sources, dev.references)
    # Every student whose int8 and fp32 variants are both selected (int8_twins pairs them by name).
    students = [(int8, fp32) for fp32, int8 in int8_twins(configs).items()] or [(INT8_MODEL, FP32_MODEL)]
    result = gate_all(rows, students)
    print()
    for line in result.lines:
        print(f"  {line}")
    print("GATE PASSED" if result.passed else "GATE FAILED: int8 chrF is more than "
          f"{GATE_TOLERANCE_CHRF} below fp32 (or a student could not be measured)")
    await tiers.report_extras(args, configs, dev, probe, dev_catalogs=set(catalogs), score=score)

    if args.write_manifest:
        served = [r for r in rows if r.guards is not False]
        write_manifest(args.manifest, manifest_scores(served, args.dev, len(rows_dev), catalogs, gate_result=result,
                                                      batch_size=args.batch_size, cli=cli))
        print(f"wrote scores to {args.manifest}")
    if not result.passed:
        return 1
    if cli is not None and not cli.passed:
        print("APERTIUM CHECK FAILED: the backend and the CLI disagree")
        return 2
    return 0


async def check_cli(args: argparse.Namespace, configs: Sequence[ModelConfig], apertium_out: dict[str, list[str]],
                    sources: Sequence[str], refs: Sequence[str]) -> CliCheck | None:
    """Apertium backend output vs the `apertium` CLI's, sentence by sentence (the last Apertium model's check)."""
    cli: CliCheck | None = None
    for config in configs:
        if config.name not in apertium_out or config.mode is None:
            continue
        t0 = time.perf_counter()
        cli_out = await apertium_cli(sources, config.mode, how=args.cli)
        cli = compare_cli(sources, apertium_out[config.name], cli_out, refs)
        print()
        print(f"{cli.line()}  [{config.name} vs `apertium -u {config.mode}` per {args.cli}, "
              f"CLI took {time.perf_counter() - t0:.1f}s]")
        for src, b, c in cli.diffs[: args.show_diffs]:
            print(f"  differs: {src!r}\n    backend: {b!r}\n    cli:     {c!r}")
    return cli


def main(argv: Sequence[str] | None = None) -> int:
    return asyncio.run(run(parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
