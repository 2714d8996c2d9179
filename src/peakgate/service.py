"""The request path, assembled: validate → admission → detect → router → PII redaction and glossary
protection → translation memory & cache (`reuse`) → scheduler/batcher → engines → restore.

`Service` implements `api.contract.TranslationService`; the HTTP layer only parses and serializes.
The control loop (autoscaling, forecasting) never calls into this path; it reads the metrics.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType

from peakgate.admission.admission import Admission
from peakgate.api.contract import Language, Readiness, Usage
from peakgate.backends.base import Backend, Health
from peakgate.backends.factory import build_backend
from peakgate.clock import Clock, MonotonicClock
from peakgate.config import PRIORITY_ORDER, ClassConfig, ModelConfig, PriorityClass, Settings
from peakgate.domain import Principal, TranslateRequest, TranslateResult, Translation
from peakgate.errors import BackendError, BadRequest, InputTooLarge, Overloaded, PeakgateError, Rejected
from peakgate.glossary import GlossaryStore, Shielded, shield, unshield
from peakgate.jobs.config import JobsConfig
from peakgate.jobs.runner import JobRunner, via_pipeline
from peakgate.memory import AddResult, TranslationMemory
from peakgate.observe.metrics import Metrics
from peakgate.resilience.degrade import CacheOnlyRefusal, Degradation, int8_twins, map_chain
from peakgate.resilience.guard import OverloadGuard
from peakgate.reuse import Reuse, Scope
from peakgate.routing import langdetect
from peakgate.routing.router import Route, TierRouter
from peakgate.scheduling.work_queue import RemoteWorkers, build_work_queue, needs_local_engines
from peakgate.stores import Stores, open_stores

_log = logging.getLogger(__name__)

LANGUAGE_NAMES: Mapping[str, str] = MappingProxyType({
    "en": "English", "es": "Spanish", "fr": "French", "de": "German", "it": "Italian", "pt": "Portuguese",
    "ca": "Catalan", "gl": "Galician", "nl": "Dutch", "eu": "Basque",
})
_AUTO = frozenset({"", "auto"})
# Workers per model queue: engines that run batches in parallel get one worker per parallel unit.
_UPSTREAM_CONCURRENCY = 4


def worker_count(model: ModelConfig) -> int:
    if model.engine == "apertium":
        return max(1, model.pipelines)
    if model.engine == "ctranslate2":
        return max(1, model.inter_threads) + model.bulk_replicas
    return _UPSTREAM_CONCURRENCY if model.engine == "openai" else 1


def effective_priority(requested: PriorityClass | None, granted: PriorityClass) -> PriorityClass:
    """A request may ask for a lower class than its key's, never a higher one."""
    if requested is None:
        return granted
    return PRIORITY_ORDER[max(PRIORITY_ORDER.index(requested), PRIORITY_ORDER.index(granted))]


class Service:
    """One process's translation pipeline. `start()` loads and warms every engine; `close()` stops them.

    A model whose engine fails to start is logged and treated as DOWN: the router falls back past it,
    so one broken engine does not take the service down.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        clock: Clock | None = None,
        metrics: Metrics | None = None,
        backends: Mapping[str, Backend] | None = None,
    ) -> None:
        self.settings = settings
        self.metrics = metrics or Metrics()
        self._clock = clock or MonotonicClock()
        self._guard = OverloadGuard(settings.resilience, settings.classes, self._clock, self.metrics,
                                    shed_queued=self._shed_queued)
        self._backends = dict(backends) if backends is not None else {
            m.name: build_backend(m, settings.models_dir, self._guard.outlier_detector) for m in settings.models
            if needs_local_engines(settings)
        }
        self._started: set[str] = set()
        self._admission = Admission(settings, self._clock, self.metrics)
        workers = {m.name: worker_count(m) for m in settings.models}
        self._twins = int8_twins(settings.models)
        self._scheduler = build_work_queue(  # in-process (the default) or the shared Redis queue
            settings, self._backends, self._clock, self.metrics, workers,
            breakers=self._guard.breakers, limits=settings.resilience.concurrency,
        )
        self._router = TierRouter(settings, self._health, self._scheduler.oldest_wait_s, self.metrics)
        self.stores: Stores = open_stores(settings, self._clock, self.metrics)
        self._tm_refresh: asyncio.Task[None] | None = None
        cache = self.stores.cache if settings.cache.enabled else None
        self._reuse = Reuse(cache, self.stores.memory, settings.cache, self.metrics)
        # Accepted jobs run on the trusted path (already admitted) at batch priority, pausing for interactive load.
        self.job_runner = JobRunner(
            self.stores.jobs, via_pipeline(lambda r, p: self.run(r, p, "batch")), self._clock,
            config=settings.jobs,
            should_pause=lambda: self._scheduler.urgent_backlog(settings.batcher.reserve_window_s),
        )

    def _shed_queued(self, priority: PriorityClass, error: Callable[[object], PeakgateError],
                     drain_per_s: float | None) -> int:
        return self._scheduler.shed_queued(priority, error, drain_per_s)  # built after the guard: looked up per call

    @property
    def jobs_config(self) -> JobsConfig:
        return self.settings.jobs

    async def _refresh_tm(self, memory: TranslationMemory) -> None:
        """Index what `peakgate tm import` (another process) added, so fuzzy matches see it without a restart."""
        while True:
            await self._clock.sleep(self.settings.tm.refresh_s)
            try:
                await asyncio.to_thread(memory.refresh)
            except PeakgateError as exc:
                _log.warning("translation memory refresh failed: %s", exc.message)

    @property
    def glossaries(self) -> GlossaryStore:
        return self.stores.glossaries

    @property
    def open_mode(self) -> bool:
        return self._admission.open_mode

    async def start(self) -> None:
        names = list(self._backends)
        results = await asyncio.gather(*(self._backends[n].start() for n in names), return_exceptions=True)
        for name, result in zip(names, results, strict=True):
            if isinstance(result, BaseException):
                _log.error("model %s failed to start and is treated as down: %s", name, result)
            else:
                self._started.add(name)
        await self._scheduler.start()
        self._guard.start()
        if self.stores.memory is not None:
            self._tm_refresh = asyncio.create_task(self._refresh_tm(self.stores.memory), name="peakgate-tm-refresh")
        if self.settings.jobs.enabled:
            await self.job_runner.start()

    async def close(self) -> None:
        await self.job_runner.close()
        await self._guard.close()
        if self._tm_refresh is not None:
            self._tm_refresh.cancel()
            await asyncio.gather(self._tm_refresh, return_exceptions=True)
            self._tm_refresh = None
        await self._scheduler.close()
        await asyncio.gather(*(b.close() for b in self._backends.values()), return_exceptions=True)
        self._started.clear()
        await self.stores.close()
        await self._admission.close()

    def authenticate(self, key: str | None) -> Principal:
        return self._admission.authenticate(key)

    async def translate(self, request: TranslateRequest, principal: Principal) -> TranslateResult:
        characters = self._validate(request)
        priority = effective_priority(request.priority, principal.priority)
        turn_s = await self._admission.admit(principal, characters, priority)
        if turn_s > 0.0:
            # A smoothed class spaces its requests out: this one waits for its turn, on its own deadline.
            budget_ms = self._deadline_ms(request, priority) - turn_s * 1000.0
            request = dataclasses.replace(request, deadline_ms=max(1.0, budget_ms))
            await self._clock.sleep(turn_s)
        result = await self._run(request, principal, priority, characters)
        await self._admission.record(principal, characters)
        return result

    async def run(self, request: TranslateRequest, principal: Principal, priority: PriorityClass) -> TranslateResult:
        """The path behind admission, for trusted local callers (the CLI): no rate limits, no billing."""
        return await self._run(request, principal, priority, self._validate(request))

    async def _run(
        self, request: TranslateRequest, principal: Principal, priority: PriorityClass, characters: int
    ) -> TranslateResult:
        source = self._source(request)
        degradation = self._guard.degradation
        route = self._route(request, principal, source, degradation)
        self._guard.admit(priority, 1000.0 * self._scheduler.service_time_s(route.model, len(request.segments)),
                          self._scheduler.capacity_per_s(route.model), request.deadline_ms)
        deadline = self._clock.now() + self._deadline_ms(request, priority) / 1000.0
        shields = self._shield(request, principal, source)
        beam = degradation.beam_size(self._class(priority).beam_size)
        scope = Scope(principal.tenant, source, request.target, f"{route.tier}/{route.chain[0]}/b{beam}",
                      request.formality, request.glossary_id, repair=degradation.fuzzy_repair)
        used: list[str] = []

        async def engine(texts: list[str]) -> list[str]:
            if degradation.cache_only(priority):
                raise CacheOnlyRefusal("degraded to cache and TM only for batch traffic; retry off-peak",
                                       retry_after_s=self.settings.resilience.ladder.min_dwell_s)
            model, out = await self._submit(route, texts, source, request, priority=priority, deadline=deadline,
                                            beam_cap=degradation.beam_cap)
            used.append(model)
            return out

        try:
            with self._guard.queued(priority, len(request.segments)):
                served = await self._reuse.serve([s.text for s in shields], scope, engine)
        except (Rejected, BackendError) as exc:
            if not isinstance(exc, CacheOnlyRefusal):
                self._guard.record(good=False)
            raise
        self._guard.record(good=True)
        model = used[-1] if used else route.chain[0]
        translations = tuple(
            Translation(unshield(s.text, sh), source, model, route.tier, s.origin, s.score)
            for s, sh in zip(served, shields, strict=True)
        )
        return TranslateResult(translations, characters, degradation.header)

    def _route(self, request: TranslateRequest, principal: Principal, source: str, degradation: Degradation) -> Route:
        """The router's pick, moved by the ladder: the light tier at L3 (pinned tenants excepted), int8 at L2."""
        light = degradation.tier_override
        # A deployment without the light tier cannot step down to it: L3 then keeps the request's own tier.
        if light is not None and light in self.settings.tiers and request.model is None and not principal.pinned:
            request = dataclasses.replace(request, tier=degradation.tier_for(request.tier or "", pinned=False))
        route = self._router.route(request, principal, source)
        if not degradation.prefer_int8:
            return route
        chain = map_chain(route.chain, degradation, self._twins)
        return dataclasses.replace(route, model=chain[0], chain=chain)

    def _shield(self, request: TranslateRequest, principal: Principal, source: str) -> list[Shielded]:
        """PII out and glossary terms protected before anything is cached, stored, logged or translated."""
        redactor = self.stores.redactors.redactor_for(principal.tenant)
        matcher = None
        if request.glossary_id:
            matcher = self.stores.resolver.matcher(principal.tenant, request.glossary_id, source, request.target)
        return [shield(text, redactor if redactor.enabled else None, matcher) for text in request.segments]

    def add_correction(self, principal: Principal, source_lang: str, target_lang: str, source: str,
                       target: str) -> AddResult:
        """A human correction into the tenant's TM, de-identified like every other stored text."""
        if self.stores.memory is None:
            raise BadRequest("the translation memory is disabled on this server")
        redactor = self.stores.redactors.redactor_for(principal.tenant)
        if redactor.enabled:
            source, target = redactor.redact(source).text, redactor.redact(target).text
        return self.stores.memory.add_correction(principal.tenant, source_lang, target_lang, source, target)

    def detect(self, text: str) -> list[tuple[str, float]]:
        return langdetect.detect(text, self._sources())

    def languages(self) -> list[Language]:
        targets: dict[str, set[str]] = {}
        for m in self.settings.models:
            targets.setdefault(m.source, set()).add(m.target)
        return [
            Language(code, LANGUAGE_NAMES.get(code, code), tuple(sorted(targets[code]))) for code in sorted(targets)
        ]

    async def usage(self, principal: Principal) -> Usage:
        count, limit = await self._admission.usage(principal)
        return Usage(character_count=count, character_limit=limit)

    def ready(self) -> bool:
        if isinstance(self._scheduler, RemoteWorkers):
            # Workers elsewhere serve the models: ready once every tier has a model that something serves.
            return all(any(self._health(m) is not Health.DOWN for m in chain) for chain in self.settings.tiers.values())
        return bool(self._started) and all(self._backends[n].cost_model().warm for n in self._started)

    def readiness(self) -> Readiness:
        if not self.ready():
            return Readiness(False, "warming up")
        late_ms = self._guard.interactive_late_ms()
        if late_ms is not None:
            return Readiness(False, f"overloaded: interactive requests wait {late_ms:.0f} ms, past their deadline",
                             late_ms / 1000.0)
        return Readiness(True, "ready")

    def health(self) -> dict[str, Health]:
        return {m.name: self._health(m.name) for m in self.settings.models}

    def _health(self, model: str) -> Health:
        if self._guard.breakers.is_open(model):
            return Health.DOWN
        if isinstance(self._scheduler, RemoteWorkers) and self._scheduler.health(model) is not Health.DOWN:
            return Health.OK
        if model not in self._started:  # no engine here (remote workers only), or it failed to start
            return Health.DOWN
        return self._backends[model].health()

    def _class(self, priority: PriorityClass) -> ClassConfig:
        return self.settings.classes[priority]  # the config fills in every class

    def _deadline_ms(self, request: TranslateRequest, priority: PriorityClass) -> float:
        return request.deadline_ms or self._class(priority).deadline_ms

    def _validate(self, request: TranslateRequest) -> int:
        limits = self.settings.limits
        if not request.segments:
            raise BadRequest("no text to translate: send at least one segment")
        if len(request.segments) > limits.max_segments:
            raise BadRequest(f"too many segments: {len(request.segments)} > {limits.max_segments} per request")
        characters = self._check_segments(request.segments, request.target)
        if characters > limits.max_request_chars:
            raise InputTooLarge(f"request has {characters} characters; the limit is {limits.max_request_chars}")
        return characters

    def _check_segments(self, segments: Sequence[str], target: str) -> int:
        """The rules every segment meets, whatever carries it (a request, a batch job, a document)."""
        if not target:
            raise BadRequest("target language is required")
        limit = self.settings.limits.max_segment_chars
        for i, segment in enumerate(segments):
            if len(segment) > limit:
                raise InputTooLarge(f"segment {i} has {len(segment)} characters; the limit is {limit}")
            _check_encodable(segment, i)
        return sum(len(s) for s in segments)

    async def check_job(self, segments: Sequence[str], source: str | None, target: str, principal: Principal
                        ) -> int:
        """A batch job's or document's checks at submission, with the synchronous path's rules and errors: every
        segment, the language pair, the caller's quota for the whole job. Returns the characters to bill.

        The jobs endpoints cap segment counts and sizes themselves (`JobsConfig`); the per-request limits would
        refuse any real document. Per-second rate limits are not charged: the runner paces a job, at batch
        priority behind interactive traffic, and a whole document charged to the key's token bucket would only
        lock that key's interactive requests out for minutes.
        """
        # A document's segments run to the hundred thousand: walked off the loop.
        characters = await asyncio.to_thread(self._check_segments, segments, target)
        self._router.check_pair(source, target)
        await self._admission.check_quota(principal, characters, "batch")
        return characters

    async def bill_job(self, principal: Principal, characters: int) -> None:
        """Bill an accepted job at submission: it runs on the trusted path (`run`), which bills nothing."""
        await self._admission.record(principal, characters)

    def _sources(self) -> list[str]:
        return sorted({m.source for m in self.settings.models})

    def _source(self, request: TranslateRequest) -> str:
        if request.source is not None and request.source.lower() not in _AUTO:
            return request.source.lower()
        candidates = sorted({m.source for m in self.settings.models if _same_base(m.target, request.target)})
        if not candidates:
            return _unsupported_source(request.target)
        found = langdetect.detect(" ".join(request.segments), candidates)
        # No cue at all (e.g. "OK", digits): the first candidate, English preferred, rather than an error.
        return found[0][0] if found else ("en" if "en" in candidates else candidates[0])

    async def _submit(
        self, route: Route, segments: list[str], source: str, request: TranslateRequest, *,
        priority: PriorityClass, deadline: float, beam_cap: int | None = None,
    ) -> tuple[str, list[str]]:
        last: PeakgateError | None = None
        self._guard.retries.record_request()
        for attempt, model in enumerate(route.chain):
            if attempt and not self._guard.retries.try_retry():
                self.metrics.rejected.labels("retry_budget", priority).inc()
                break  # every engine failing at once: fail fast rather than multiply the load
            try:
                texts = await self._scheduler.submit(
                    model, segments, source, request.target, priority, deadline, request.split_sentences,
                    beam_cap=beam_cap,
                )
            except (BackendError, Overloaded) as exc:
                self.metrics.fallbacks.labels(tier=route.tier, model=model).inc()
                _log.warning("model %s failed (%s); falling back along tier %s", model, exc.message, route.tier)
                last = exc
                continue
            return model, texts
        assert last is not None  # a route's chain is never empty
        raise last


def _same_base(model_lang: str, requested: str) -> bool:
    return model_lang.lower() == requested.lower().replace("_", "-").split("-", 1)[0]


def _unsupported_source(target: str) -> str:
    """No model translates into `target`: return a source anyway so the router reports the unsupported pair."""
    return "en" if target.lower() != "en" else "es"


def _check_encodable(segment: str, index: int) -> None:
    # Checked here, per request, because a bad segment inside a shared batch would fail its neighbours too.
    if "\0" in segment:
        raise BadRequest(f"segment {index} contains a NUL character")
    try:
        segment.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise BadRequest(f"segment {index} is not valid UTF-8 text (lone surrogate at {exc.start})") from exc

