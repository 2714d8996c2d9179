"""CTranslate2: a converted Transformer (the distilled students) with one shared SentencePiece model."""

from __future__ import annotations

import asyncio
import math
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ctranslate2
import sentencepiece as spm

from peakgate.backends.base import CostModel, DecodeOptions, Health
from peakgate.backends.niceness import run_at_nice
from peakgate.errors import BackendError, ConfigError, EngineCrashed, Unavailable, UnsupportedPair

_EOS = "</s>"  # the students were trained with EOS on the source side and ctranslate2 does not add it
_SPM_FILE = "source.spm"  # one SentencePiece model serves both sides
_PASS_THROUGH_COMPUTE_TYPES = frozenset({"default", "auto"})  # ctranslate2 picks, nothing to check
# Added to the relative decoding cap: short sources have long translations relative to their length ("OK" ->
# "Aceptar"); on the dev, probe and held-out sets no human reference is longer than 2 x source tokens + 5.
_CAP_SLACK_TOKENS = 10
_SCORES_KEPT = 8192  # sentences whose confidence stays readable after their batch: far more than one round trip


@dataclass(frozen=True, slots=True)
class DecodingGuards:
    """Per-model limits against the students' failure modes: loops ("TIFFFFFF", "isrc/isrc/isrc/...") and one
    looping sentence holding its batch for the whole decoding cap. The served values come from `ModelConfig`
    (measured: docs/quality.md); `off()` is plain decoding, what the benchmarks compare against."""

    length_ratio: float | None  # cap: ratio x source tokens + slack, never above the class's cap; None: off
    no_repeat_ngram_size: int  # 0: off
    repetition_penalty: float  # 1.0: off
    group_size: int = 0  # decode a batch sorted by source length, in groups of this many (0: one group)

    @classmethod
    def off(cls) -> DecodingGuards:
        return cls(length_ratio=None, no_repeat_ngram_size=0, repetition_penalty=1.0)


def length_groups(lengths: Sequence[int], size: int) -> list[list[int]]:
    """Indices sorted by length, in groups of `size` (0: all in one): each group pads only to its own longest."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    step = size if size > 0 else max(1, len(order))
    return [order[i : i + step] for i in range(0, len(order), step)]


def decoding_cap(longest_source: int, ratio: float | None, ceiling: int) -> int:
    """Decoding steps for a group whose longest source has `longest_source` tokens."""
    if ratio is None:
        return ceiling
    return max(1, min(ceiling, math.ceil(ratio * longest_source) + _CAP_SLACK_TOKENS))


def score_key(text: str) -> str:
    """What a confidence is filed under: canonically equal texts (NFC, whitespace runs) share it."""
    return " ".join(unicodedata.normalize("NFC", text).split())


class RecentConfidences:
    """The last few thousand sentences' confidences (mean token log-probability), written by the decoding
    threads and read by quality estimation: the scheduler hands back text only."""

    def __init__(self, capacity: int = _SCORES_KEPT) -> None:
        self._capacity = capacity
        self._scores: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, texts: Sequence[str], scores: Sequence[float]) -> None:
        with self._lock:
            for text, value in zip(texts, scores, strict=True):
                key = score_key(text)
                self._scores[key] = value
                self._scores.move_to_end(key)
            while len(self._scores) > self._capacity:
                self._scores.popitem(last=False)

    def get(self, text: str) -> float | None:
        with self._lock:
            return self._scores.get(score_key(text))


@dataclass(slots=True)
class _Lane:
    """One ctranslate2 Translator with `replicas` decoding threads at `nice`; `running`: batches handed to it."""

    translator: Any  # ctranslate2.Translator (untyped)
    executor: ThreadPoolExecutor
    replicas: int
    nice: int
    running: int = 0


@dataclass(frozen=True, slots=True)
class _Loaded:
    sp: Any  # sentencepiece.SentencePieceProcessor (untyped)
    lanes: tuple[_Lane, ...]  # the lane for urgent batches first


def pick_lane(running: Sequence[int], replicas: Sequence[int], urgent: bool) -> int:
    """Urgent batches prefer the first lane, others the last; either takes another lane only where a replica is
    free, and queues at its own lane when none is."""
    order = list(range(len(running)))
    if not urgent:
        order.reverse()
    return next((i for i in order if running[i] < replicas[i]), order[0])


def resolve_device(device: str) -> str:
    """`auto` means CUDA when a device is visible; `cuda` with none visible is a config mistake."""
    cuda_devices = ctranslate2.get_cuda_device_count()
    if device == "auto":
        return "cuda" if cuda_devices > 0 else "cpu"
    if device == "cuda" and cuda_devices == 0:
        raise ConfigError("device 'cuda' was requested but no CUDA device is visible")
    return device


def check_compute_type(compute_type: str, device: str) -> None:
    """Fail with the supported list instead of ctranslate2's terse error at load time."""
    if compute_type in _PASS_THROUGH_COMPUTE_TYPES:
        return
    supported = sorted(ctranslate2.get_supported_compute_types(device))
    if compute_type not in supported:
        hint = " (float16 compute types need a CUDA device)" if "float16" in compute_type and device == "cpu" else ""
        raise ConfigError(f"compute_type {compute_type!r} is not supported on {device}{hint}; supported: {supported}")


def check_model_dir(path: Path) -> None:
    if not path.is_dir():
        raise ConfigError(f"ctranslate2 model folder {path} does not exist")
    for required in ("model.bin", _SPM_FILE):
        if not (path / required).is_file():
            raise ConfigError(f"ctranslate2 model folder {path} has no {required}")


class CTranslate2Backend:
    """One CTranslate2 model for one pair; decoding runs on threads so the event loop stays free."""

    def __init__(
        self, name: str, path: Path, source: str, target: str,
        *, compute_type: str = "int8", device: str = "cpu", inter_threads: int = 1, intra_threads: int = 0,
        max_batch_size: int = 32, preferred_batch_sizes: tuple[int, ...] = (8, 16, 32), bulk_replicas: int = 0,
        bulk_nice: int = 19, guards: DecodingGuards | None = None,
    ) -> None:
        self._name = name
        self._path = path
        self._pair = (source, target)
        self._compute_type = compute_type
        self._device = device
        self._inter_threads = max(1, inter_threads)
        self._intra_threads = intra_threads
        self._bulk_replicas = bulk_replicas
        self._bulk_nice = bulk_nice
        self._max_batch_size = max_batch_size
        self._preferred_batch_sizes = preferred_batch_sizes
        self._guards = guards or DecodingGuards.off()
        self._confidences = RecentConfidences()
        self._loaded: _Loaded | None = None
        self._last_batch_failed = False
        self.restarts = 0

    @property
    def name(self) -> str:
        return self._name

    @property
    def pairs(self) -> frozenset[tuple[str, str]]:
        return frozenset({self._pair})

    async def start(self) -> None:
        if self._loaded is not None:
            return
        check_model_dir(self._path)
        device = resolve_device(self._device)
        check_compute_type(self._compute_type, device)
        self._loaded = await asyncio.to_thread(self._load, device)
        try:  # one warm-up batch per lane: an urgent one lands on the first, the other on the last
            await asyncio.gather(*(self.translate_batch(["Hello."], *self._pair, DecodeOptions(urgent=urgent))
                                   for urgent in (True, False)))
        except BaseException:
            await self.close()
            raise

    def _lane_plan(self) -> list[tuple[int, int]]:
        """(replicas, nice) per lane: the inter_threads replicas at the server's priority, then any bulk
        replicas at `bulk_nice`, which the executor gives lower-class batches while interactive is recent."""
        return [(self._inter_threads, 0)] + ([(self._bulk_replicas, self._bulk_nice)] if self._bulk_replicas else [])

    def _load(self, device: str) -> _Loaded:
        try:
            sp = spm.SentencePieceProcessor(model_file=str(self._path / _SPM_FILE))
            lanes = tuple(self._load_lane(device, i, replicas, nice)
                          for i, (replicas, nice) in enumerate(self._lane_plan()))
        except (RuntimeError, ValueError, OSError) as exc:
            raise Unavailable(f"{self._name}: cannot load ctranslate2 model from {self._path}: {exc}") from exc
        return _Loaded(sp, lanes)

    def _load_lane(self, device: str, index: int, replicas: int, nice: int) -> _Lane:
        translator = run_at_nice(lambda: ctranslate2.Translator(
            str(self._path), device=device, compute_type=self._compute_type,
            inter_threads=replicas, intra_threads=self._intra_threads,
        ), nice)
        # One worker per translator replica: more threads would only queue inside ctranslate2.
        executor = ThreadPoolExecutor(max_workers=replicas, thread_name_prefix=f"ct2-{self._name}-{index}")
        return _Lane(translator, executor, replicas, nice)

    def cost_model(self) -> CostModel:
        return CostModel(self._max_batch_size, self._preferred_batch_sizes, self._loaded is not None,
                         self._bulk_replicas)

    @property
    def guards(self) -> DecodingGuards:
        return self._guards

    def confidence(self, text: str) -> float | None:
        """The mean token log-probability of `text`'s latest translation here (0 is certain), while remembered."""
        return self._confidences.get(text)

    def health(self) -> Health:
        if self._loaded is None:
            return Health.DOWN
        # A failed batch leaves the model loaded, so report degraded until a batch succeeds again.
        return Health.DEGRADED if self._last_batch_failed else Health.OK

    async def translate_batch(
        self, segments: Sequence[str], source: str, target: str, options: DecodeOptions
    ) -> list[str]:
        if (source, target) != self._pair:
            raise UnsupportedPair(f"{self._name} translates {self._pair[0]}->{self._pair[1]}, not {source}->{target}")
        loaded = self._loaded
        if loaded is None:
            raise Unavailable(f"{self._name} is not started")
        lanes = loaded.lanes
        lane = lanes[pick_lane([x.running for x in lanes], [x.replicas for x in lanes], options.urgent)]
        loop = asyncio.get_running_loop()
        try:
            future = loop.run_in_executor(lane.executor, self._translate_sync, loaded.sp, lane, list(segments), options)
        except RuntimeError as exc:  # the executor was shut down by a concurrent close()
            raise Unavailable(f"{self._name} is closing") from exc
        lane.running += 1
        try:
            outputs = await future
        except BackendError:
            self._last_batch_failed = True
            raise
        finally:
            lane.running -= 1
        self._last_batch_failed = False
        return outputs

    def _translate_sync(self, sp: Any, lane: _Lane, segments: list[str], options: DecodeOptions) -> list[str]:
        """Tokenise, decode and detokenise on a worker thread; segments with no tokens come back as ""."""
        tokenised: list[list[str]] = [sp.encode(s, out_type=str) for s in segments]
        todo = [i for i, tokens in enumerate(tokenised) if tokens]
        outputs = [""] * len(segments)
        if not todo:
            return outputs
        batch = [[*tokenised[i], _EOS] for i in todo]
        try:
            results = self._decode(lane, batch, options)
        except RuntimeError:
            # The engine's equivalent of a crashed process: reload the model and retry the batch once.
            try:
                self._reload(lane)
                results = self._decode(lane, batch, options)
            except RuntimeError as exc:
                raise EngineCrashed(f"{self._name}: ctranslate2 failed twice, after a reload: {exc}") from exc
        for i, result in zip(todo, results, strict=True):
            outputs[i] = sp.decode(result.hypotheses[0])
        self._confidences.put([segments[i] for i in todo], [result.scores[0] for result in results])
        return outputs

    def _decode(self, lane: _Lane, batch: list[list[str]], options: DecodeOptions) -> list[Any]:
        """Decode in length groups, each capped relative to its own longest source, in the input's order."""
        guards = self._guards
        results: list[Any] = [None] * len(batch)
        for group in length_groups([len(tokens) for tokens in batch], guards.group_size):
            cap = decoding_cap(max(len(batch[i]) for i in group), guards.length_ratio, options.max_decoding_length)
            try:
                decoded = lane.translator.translate_batch(
                    [batch[i] for i in group], beam_size=options.beam_size, max_decoding_length=cap,
                    max_batch_size=self._max_batch_size, no_repeat_ngram_size=guards.no_repeat_ngram_size,
                    repetition_penalty=guards.repetition_penalty, return_scores=True,
                )
            except ValueError as exc:
                raise BackendError(f"{self._name} rejected the decoding options {options}: {exc}") from exc
            for i, result in zip(group, decoded, strict=True):
                results[i] = result
        return results

    def _reload(self, lane: _Lane) -> None:
        if lane.translator.model_is_loaded:
            lane.translator.unload_model()
        run_at_nice(lane.translator.load_model, lane.nice)  # threads made by the reload keep the lane's nice
        self.restarts += 1

    async def close(self) -> None:
        loaded, self._loaded = self._loaded, None
        if loaded is None:
            return
        for lane in loaded.lanes:
            # Let in-flight batches finish before the model memory goes away.
            await asyncio.to_thread(lane.executor.shutdown, wait=True)
            lane.translator.unload_model()
