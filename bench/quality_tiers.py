"""The QE-gated tiers, the probe set and the decoding guards' speed, for `python -m bench.quality`.

- Tiers: each default tier's first two en→es engines (primary, then its quality fallback) on the dev and probe
  sets, with quality estimation off (the primary alone) and on (`peakgate.quality.QualityGate`, the code the
  service runs, over the real backends). Beam 1, the interactive class.
- Probe checks: outputs equal to their input where the human reference differs, and outputs that loop.
- Speed: sentences/s on the dev set with the guards off and on (the served configuration), interleaved rounds
  in one run, plus the time of one batch of 31 short sentences and a looping one.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from bench._common import DevRow, heldout_catalogs, heldout_pairs, render_table, started, translate_all
from peakgate.backends.base import Backend, DecodeOptions
from peakgate.config import ModelConfig, Settings, default_tiers
from peakgate.observe.metrics import Metrics
from peakgate.quality.estimate import loop_in, same_text
from peakgate.quality.fallback import QualityGate
from peakgate.quality.language import output_language
from peakgate.quality.settings import QualityConfig

PAIR = ("en", "es")
ScoreFn = Callable[[Sequence[str], Sequence[str]], tuple[float, float]]  # (hypotheses, references) -> chrF, BLEU
SHORT_WORDS = 3  # "short text": 1-3 words (greetings, labels)
GREEDY = DecodeOptions(beam_size=1)
LOOPING = "Could not get image width (bad TIFF file)"  # dev row 284: "TIFFFFFFFF..." without the guards
TIER_HEADERS = ("tier", "chain", "QE", "dev chrF", "dev BLEU", "probe chrF", "probe BLEU", "probe <=3w chrF",
                "dev re-translated", "dev fallback served", "probe identical", "probe loops", "dev sent/s")
SPEED_HEADERS = ("model", "guards", "dev sent/s", "ratio to off", "31 short + 1 looping: ms")


def unguarded(config: ModelConfig) -> ModelConfig:
    return config.model_copy(update={"max_decoding_length_ratio": None, "no_repeat_ngram_size": 0,
                                     "repetition_penalty": 1.0, "length_group_size": 0})


@dataclass(frozen=True, slots=True)
class EvalSet:
    sources: list[str]
    references: list[str]

    @classmethod
    def of(cls, rows: Sequence[DevRow]) -> EvalSet:
        return cls([r.en for r in rows], [r.es for r in rows])

    def short(self) -> EvalSet:
        keep = [i for i, s in enumerate(self.sources) if len(s.split()) <= SHORT_WORDS]
        return EvalSet([self.sources[i] for i in keep], [self.references[i] for i in keep])


@dataclass(frozen=True, slots=True)
class TierRow:
    tier: str
    chain: tuple[str, ...]
    qe: bool
    dev: tuple[float, float]  # chrF, BLEU
    probe: tuple[float, float]
    probe_short_chrf: float
    retranslated: int  # dev segments that failed QE
    fallback_served: int  # ... and were served from the fallback engine
    identical: int  # probe outputs equal to their input where the reference is not
    loops: int  # probe outputs that loop
    sent_per_s: float

    def cells(self) -> tuple[object, ...]:
        return (self.tier, " > ".join(self.chain), "on" if self.qe else "off", *self.dev, *self.probe,
                self.probe_short_chrf, self.retranslated, self.fallback_served, self.identical, self.loops,
                self.sent_per_s)


class TierRunner:
    """Translates eval sets through a tier's chain with or without the quality gate."""

    def __init__(self, backends: Mapping[str, Backend], models: Sequence[ModelConfig], config: QualityConfig,
                 batch_size: int) -> None:
        self._backends = backends
        self._models = models
        self._config = config
        self._batch_size = batch_size
        self._languages = output_language()
        self._routing = QualityGate(config, models, Metrics(), backends, self._languages)

    def opinions(self, chain: tuple[str, ...]) -> tuple[str, ...]:
        return self._routing.opinions(chain[0], chain)

    async def translate(self, chain: tuple[str, ...], texts: Sequence[str], metrics: Metrics | None
                        ) -> tuple[list[str], list[str]]:
        """Outputs and the model serving each; `metrics` None: the primary engine alone."""
        gate = None if metrics is None else QualityGate(self._config, self._models, metrics, self._backends,
                                                        self._languages)
        outputs: list[str] = []
        models: list[str] = []
        for i in range(0, len(texts), self._batch_size):
            batch = list(texts[i : i + self._batch_size])
            out = await self._backends[chain[0]].translate_batch(batch, *PAIR, GREEDY)
            if gate is None:
                outputs += out
                models += [chain[0]] * len(out)
                continue
            reviewed = await gate.review(batch, out, chain[0], chain=chain, pair=PAIR, translate=self._again,
                                         split=False)  # whole segments went to the engine: scores are per segment
            outputs += reviewed.texts
            models += reviewed.models
        return outputs, models

    async def _again(self, model: str, texts: list[str]) -> list[str]:
        return list(await self._backends[model].translate_batch(texts, *PAIR, GREEDY))


def counter_total(metrics: Metrics, name: str) -> int:
    return int(sum(s.value for family in metrics.registry.collect() for s in family.samples
                   if s.name == name))


def en_es_chains(models: Sequence[ModelConfig]) -> dict[str, tuple[str, ...]]:
    """Each default tier's en→es chain (the es→en model in it serves no en→es request)."""
    names = {m.name for m in models if (m.source, m.target) == PAIR}
    return {tier: tuple(m for m in chain if m in names) for tier, chain in default_tiers().items()}


async def tier_rows(models: Sequence[ModelConfig], dev: EvalSet, probe: EvalSet, *, config: QualityConfig,
                    batch_size: int, score: ScoreFn) -> list[TierRow]:
    rows: list[TierRow] = []
    async with contextlib.AsyncExitStack() as stack:
        backends = {m.name: await stack.enter_async_context(started(m)) for m in models}
        runner = TierRunner(backends, models, config, batch_size)
        for tier, chain in en_es_chains(models).items():
            for qe in (False, True):
                rows.append(await _tier_row(runner, tier, chain, qe=qe, dev=dev, probe=probe, score=score))
    return rows


async def _tier_row(runner: TierRunner, tier: str, chain: tuple[str, ...], *, qe: bool, dev: EvalSet,
                    probe: EvalSet, score: ScoreFn) -> TierRow:
    metrics = Metrics() if qe else None
    t0 = time.perf_counter()
    dev_out, dev_models = await runner.translate(chain, dev.sources, metrics)
    rate = len(dev.sources) / (time.perf_counter() - t0)
    retranslated = counter_total(metrics, "peakgate_qe_fallbacks_total") if metrics is not None else 0
    probe_out, _ = await runner.translate(chain, probe.sources, Metrics() if qe else None)
    short = probe.short()
    short_out, _ = await runner.translate(chain, short.sources, Metrics() if qe else None)
    identical = sum(same_text(s, o) and not same_text(s, r)
                    for s, o, r in zip(probe.sources, probe_out, probe.references, strict=True))
    loops = sum(loop_in(s, o) is not None for s, o in zip(probe.sources, probe_out, strict=True))
    opinions = runner.opinions(chain) if qe else ()
    return TierRow(tier, (chain[0], *opinions), qe, score(dev_out, dev.references),
                   score(probe_out, probe.references), score(short_out, short.references)[0], retranslated,
                   sum(m != chain[0] for m in dev_models), identical, loops, rate)


@dataclass(frozen=True, slots=True)
class SpeedRow:
    model: str
    guards: bool
    sent_per_s: float
    ratio: float
    loop_batch_ms: float

    def cells(self) -> tuple[object, ...]:
        return (self.model, "on" if self.guards else "off", self.sent_per_s, self.ratio, self.loop_batch_ms)


async def speed_rows(students: Sequence[ModelConfig], dev: EvalSet, rounds: int, batch_size: int) -> list[SpeedRow]:
    """Guards off and on, every student, `rounds` interleaved rounds (medians): one machine state for all."""
    variants = [(m.name, guarded, m if guarded else unguarded(m)) for m in students for guarded in (False, True)]
    rates: dict[tuple[str, bool], list[float]] = {(n, g): [] for n, g, _ in variants}
    loop_ms: dict[tuple[str, bool], list[float]] = {(n, g): [] for n, g, _ in variants}
    loop_batch = [LOOPING, *(["Open the file"] * 31)]
    async with contextlib.AsyncExitStack() as stack:
        backends = {(n, g): await stack.enter_async_context(started(c)) for n, g, c in variants}
        for r in range(rounds):
            for key in (list(backends) if r % 2 == 0 else list(reversed(backends))):
                t0 = time.perf_counter()
                await translate_all(backends[key], dev.sources, *PAIR, options=GREEDY, batch_size=batch_size)
                rates[key].append(len(dev.sources) / (time.perf_counter() - t0))
                t0 = time.perf_counter()
                await backends[key].translate_batch(loop_batch, *PAIR, GREEDY)
                loop_ms[key].append(1000.0 * (time.perf_counter() - t0))
    rows = []
    for name, guarded, _ in variants:
        rate = statistics.median(rates[(name, guarded)])
        rows.append(SpeedRow(name, guarded, rate, rate / statistics.median(rates[(name, False)]),
                             statistics.median(loop_ms[(name, guarded)])))
    return rows


async def report_tiers(label: str, configs: Sequence[ModelConfig], dev: EvalSet, probe: EvalSet, *,
                       batch_size: int, score: ScoreFn) -> None:
    rows = await tier_rows(configs, dev, probe, config=Settings().quality, batch_size=batch_size, score=score)
    print(f"\ntiers on {label} (beam 1; QE on: the first engine, then quality estimation and the next engine):")
    print(render_table(TIER_HEADERS, [r.cells() for r in rows]))


async def report_extras(args: argparse.Namespace, configs: Sequence[ModelConfig], dev: EvalSet,
                        probe: EvalSet | None, *, dev_catalogs: set[str], score: ScoreFn) -> None:
    """The tier tables (dev, and held-out pairs) and the guards' speed, as `args` asks."""
    empty = EvalSet([], [])
    if args.tiers:
        await report_tiers("the dev set", configs, dev, probe or empty, batch_size=args.batch_size, score=score)
    if args.heldout:
        catalogs = (heldout_catalogs(args.dev) or set()) - dev_catalogs
        rows = heldout_pairs(catalogs, args.heldout, exclude=dev.sources)
        print(f"\nheld-out pairs: {len(rows)} from {sorted(catalogs)} (never tuned on)")
        await report_tiers("held-out pairs (the 'dev' columns)", configs, EvalSet.of(rows), probe or empty,
                           batch_size=args.batch_size, score=score)
    if args.speed_rounds:
        students = [c for c in configs if c.engine == "ctranslate2"]
        speed = await speed_rows(students, dev, args.speed_rounds, args.batch_size)
        print(f"\nspeed, guards off vs on ({args.speed_rounds} interleaved rounds, medians, batch {args.batch_size}):")
        print(render_table(SPEED_HEADERS, [r.cells() for r in speed]))
