"""The request path, assembled: validate → admission → detect → router → PII redaction and glossary
protection → translation memory & cache (`reuse`) → scheduler/batcher → engines → restore.

`Service` implements `api.contract.TranslationService`; the HTTP layer only parses and serializes.
The control loop (autoscaling, forecasting) never calls into this path; it reads the metrics.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence

from peakgate.admission.admission import Admission
from peakgate.admission.keys import ANONYMOUS, effective_priority
from peakgate.api.contract import Language, Readiness, Usage
from peakgate.backends.base import Backend, Health
from peakgate.backends.factory import build_backend
from peakgate.clock import Clock, MonotonicClock
from peakgate.config import ClassConfig, PriorityClass, Settings
from peakgate.domain import Principal, TranslateRequest, TranslateResult, Translation
from peakgate.errors import BackendError, BadRequest, InputTooLarge, Overloaded, PeakgateError, Rejected
from peakgate.glossary import GlossaryStore, Shielded, shield, unshield
from peakgate.jobs.config import JobsConfig
from peakgate.jobs.offpeak_redis import build_off_peak
from peakgate.jobs.runner import JobRunner, via_pipeline
from peakgate.memory import AddResult, TranslationMemory
from peakgate.observe.metrics import EngineUsage, Metrics
from peakgate.quality.attribution import models_serving
from peakgate.quality.fallback import QualityGate
from peakgate.quality.language import output_language
from peakgate.resilience.degrade import CacheOnlyRefusal, Degradation, int8_twins, map_chain
from peakgate.resilience.guard import OverloadGuard
from peakgate.reuse import Reuse, Scope
from peakgate.routing.languages import Coverage, same_language
from peakgate.routing.pivot import run_pivoted
from peakgate.routing.router import Route, TierRouter
from peakgate.scheduling.concurrency import worker_count
from peakgate.scheduling.work_queue import RemoteWorkers, build_work_queue, needs_local_engines
from peakgate.stores import Stores, open_stores

_log = logging.getLogger(__name__)

_AUTO = frozenset({"", "auto"})


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
                                    shed_queued=self._shed_queued, slo=settings.slo)
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
        self._quality = QualityGate(settings.quality, settings.models, self.metrics, self._backends, output_language())
        self._coverage = Coverage(settings)  # served pairs, pivot plans, source detection
        self.stores: Stores = open_stores(settings, self._clock, self.metrics)
        self._tm_refresh: asyncio.Task[None] | None = None
        cache = self.stores.cache if settings.cache.enabled else None
        self._reuse = Reuse(cache, self.stores.memory, settings.cache, self.metrics)
        self._engine_usage = EngineUsage(self.metrics, [*(k.tenant for k in settings.keys), ANONYMOUS.tenant])
        # Accepted jobs run on the trusted path (already admitted) at batch priority, pausing for interactive load.
        self.job_runner = JobRunner(
            self.stores.jobs, via_pipeline(lambda r, p: self.run(r, p, "batch")), self._clock,
            config=settings.jobs,
            should_pause=lambda: self._scheduler.urgent_backlog(settings.batcher.reserve_window_s),
            off_peak=build_off_peak(settings.jobs, settings.queue, self._clock),
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
        detection = asyncio.create_task(asyncio.to_thread(self._coverage.warm))  # its models load beside engines
        results = await asyncio.gather(*(self._backends[n].start() for n in names), return_exceptions=True)
        for name, result in zip(names, results, strict=True):
            if isinstance(result, BaseException):
                _log.error("model %s failed to start and is treated as down: %s", name, result)
            else:
                self._started.add(name)
        await detection
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
        result = await self._serve(request, principal, priority, characters)
        await self._admission.record(principal, characters)
        return result

    async def run(self, request: TranslateRequest, principal: Principal, priority: PriorityClass) -> TranslateResult:
        """The path behind admission, for trusted local callers (the CLI): no rate limits, no billing."""
        return await self._serve(request, principal, priority, self._validate(request))

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
        served_by: dict[str, str] = {}  # engine input -> the model whose output was served

        async def engine(texts: list[str]) -> list[str]:
            if degradation.cache_only(priority):
                raise CacheOnlyRefusal("degraded to cache and TM only for batch traffic; retry off-peak",
                                       retry_after_s=self.settings.resilience.ladder.min_dwell_s)
            models, out = await self._submit(route, texts, source, request, priority=priority, deadline=deadline,
                                             beam_cap=degradation.beam_cap, review=degradation.alternatives)
            used.append(models[0] if models else route.chain[0])
            served_by.update(zip(texts, models, strict=True))
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
        models, engine_chars = models_serving(served, shields, served_by, model)
        for name, chars in engine_chars.items():  # what the autoscaler's live cost is split by
            self._engine_usage.record(name, route.tier, principal.tenant, chars)
        translations = tuple(Translation(unshield(s.text, sh), source, name, route.tier, s.origin, s.score)
                             for name, s, sh in zip(models, served, shields, strict=True))
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
        return self._coverage.detect(text)

    def languages(self) -> list[Language]:
        return self._coverage.languages()

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
        self._coverage.check(source, target)  # served directly or through a pivot
        await self._admission.check_quota(principal, characters, "batch")
        return characters

    async def bill_job(self, principal: Principal, characters: int) -> None:
        """Bill an accepted job at submission: it runs on the trusted path (`run`), which bills nothing."""
        await self._admission.record(principal, characters)

    def _source(self, request: TranslateRequest) -> str:
        if request.source is not None and request.source.lower() not in _AUTO:
            return request.source.lower()
        return self._coverage.source_of(" ".join(request.segments), request.target)

    async def _serve(
        self, request: TranslateRequest, principal: Principal, priority: PriorityClass, characters: int
    ) -> TranslateResult:
        """One hop, or two through a pivot language (`routing.pivot`) when no model serves the pair directly."""
        source = self._source(request)
        if (request.source or "").lower() in _AUTO and same_language(source, request.target):
            # DeepL's answer to text already in the target language: the text itself, not an error.
            return TranslateResult(tuple(Translation(text, source, "none", "none", "unchanged")
                                         for text in request.segments), characters, None)
        request = dataclasses.replace(request, source=source)  # detected once, for both hops
        plan = self._coverage.plan(source, request.target) if request.model is None else None
        if plan is None and request.model is None:
            raise self._coverage.unsupported(source, request.target)

        def run(hop: TranslateRequest) -> Awaitable[TranslateResult]:
            return self._run(self._coverage.for_engines(hop), principal, priority, characters)

        if plan is None or plan.pivot is None:
            return await run(request)
        return await run_pivoted(request, plan, run, budget_ms=self._deadline_ms(request, priority),
                                 clock=self._clock, metrics=self.metrics)

    async def _submit(
        self, route: Route, segments: list[str], source: str, request: TranslateRequest, *,
        priority: PriorityClass, deadline: float, beam_cap: int | None = None, review: bool = True,
    ) -> tuple[list[str], list[str]]:
        """(the model serving each segment, the outputs): the first model of the chain that answers, then, with
        `review`, quality estimation and the next engine's candidate for segments that fail it."""
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
            again = functools.partial(self._scheduler.submit, source=source, target=request.target, priority=priority,
                                      deadline=deadline, split_sentences=request.split_sentences, beam_cap=beam_cap)
            reviewed = await self._quality.review(segments, texts, model, chain=route.chain, translate=again,
                                                  pair=(source, request.target), split=request.split_sentences,
                                                  enabled=review)
            return reviewed.models, reviewed.texts
        assert last is not None  # a route's chain is never empty
        raise last


def _check_encodable(segment: str, index: int) -> None:
    # Checked here, per request, because a bad segment inside a shared batch would fail its neighbours too.
    if "\0" in segment:
        raise BadRequest(f"segment {index} contains a NUL character")
    try:
        segment.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise BadRequest(f"segment {index} is not valid UTF-8 text (lone surrogate at {exc.start})") from exc

