"""A deterministic `TranslationService` for contract tests of the HTTP layer (no engines, no admission).

Translation upper-cases each segment; `fail_with` makes `translate` raise; keys other than `GOOD_KEY`
(and None, in open mode) are refused like the real service refuses them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TypeVar

from starlette.testclient import TestClient

from peakgate.api.app import create_app
from peakgate.api.contract import Language, Readiness, Usage
from peakgate.config import Settings
from peakgate.domain import Principal, TranslateRequest, TranslateResult, Translation
from peakgate.errors import BadRequest, PeakgateError, Unauthorized, UnsupportedPair
from peakgate.glossary import GlossaryStore, build_glossary_store
from peakgate.jobs.config import JobsConfig
from peakgate.jobs.model import Job, NewJob
from peakgate.jobs.offload import AsyncJobStore
from peakgate.jobs.store import JobStore, SqliteJobStore
from peakgate.memory import AddResult
from peakgate.observe.metrics import Metrics

T = TypeVar("T")
GOOD_KEY = "good-key"


async def _inline(call: Callable[[], T]) -> T:
    return call()  # the unit tests' store is in memory: no thread needed
LANGUAGES = (Language("en", "English", ("es",)), Language("es", "Spanish", ("en",)))


@dataclass
class FakeService:
    settings: Settings = field(default_factory=Settings)
    metrics: Metrics = field(default_factory=Metrics)
    open_mode: bool = False
    fail_with: PeakgateError | None = None
    is_ready: bool = True
    character_count: int = 0
    character_limit: int = 500_000
    degraded: str | None = None  # the ladder level results report
    requests: list[TranslateRequest] = field(default_factory=list)
    corrections: list[tuple[str, str, str, str, str]] = field(default_factory=list)
    glossaries: GlossaryStore = field(default_factory=lambda: build_glossary_store("memory"))
    jobs: JobStore = field(default_factory=lambda: SqliteJobStore(":memory:"))
    jobs_config: JobsConfig = field(default_factory=JobsConfig)
    wakes: int = 0  # the job runner asked to look for queued jobs now

    @property
    def job_runner(self) -> FakeService:
        return self  # the routes only submit, read the store and ask for an estimate

    @property
    def store(self) -> AsyncJobStore:
        return AsyncJobStore(self.jobs, _inline)

    async def submit(self, job: NewJob) -> Job:
        return self.jobs.create(job)

    async def check_job(self, segments: Sequence[str], source: str | None, target: str, principal: Principal
                        ) -> int:
        if target not in {t for lang in LANGUAGES for t in lang.targets}:
            raise UnsupportedPair(f"no model translates into {target!r}")
        return sum(len(s) for s in segments)

    async def bill_job(self, principal: Principal, characters: int) -> None:
        self.character_count += characters

    def seconds_remaining(self, job: Job) -> int | None:
        return None

    def wake(self) -> None:
        self.wakes += 1

    def add_correction(self, principal: Principal, source_lang: str, target_lang: str, source: str,
                       target: str) -> AddResult:
        self.corrections.append((principal.tenant, source_lang, target_lang, source, target))
        return AddResult(inserted=1)

    def authenticate(self, key: str | None) -> Principal:
        if key == GOOD_KEY or (key is None and self.open_mode):
            return Principal(key=key, tenant="test", priority="interactive")
        raise Unauthorized("invalid API key")

    async def translate(self, request: TranslateRequest, principal: Principal) -> TranslateResult:
        self.requests.append(request)
        if self.fail_with is not None:
            raise self.fail_with
        limits = self.settings.limits
        if not request.segments:
            raise BadRequest("no text to translate: send at least one segment")
        if len(request.segments) > limits.max_segments:
            raise BadRequest(f"too many segments: {len(request.segments)} > {limits.max_segments} per request")
        source = request.source or self.detect(" ".join(request.segments))[0][0]
        served = {(lang.code, t) for lang in LANGUAGES for t in lang.targets}
        if (source, request.target.partition("-")[0]) not in served:  # "en" serves "en-us", as in the router
            raise UnsupportedPair(f"no model translates {source} → {request.target}")
        tier = request.tier or "medium"
        translations = tuple(Translation(s.upper(), source, f"fake-{source}-{request.target}", tier)
                             for s in request.segments)
        return TranslateResult(translations, sum(len(s) for s in request.segments), self.degraded)

    def detect(self, text: str) -> list[tuple[str, float]]:
        # Spanish when it looks Spanish, else English: enough to tell detection happened.
        spanish = any(word in text.lower().split() for word in ("hola", "el", "la", "es"))
        return [("es", 0.9), ("en", 0.1)] if spanish else [("en", 0.9), ("es", 0.1)]

    def languages(self) -> list[Language]:
        return list(LANGUAGES)

    async def usage(self, principal: Principal) -> Usage:
        return Usage(self.character_count, self.character_limit)

    def readiness(self) -> Readiness:
        return Readiness(True, "ready") if self.is_ready else Readiness(False, "warming up")


def client(service: FakeService) -> TestClient:
    return TestClient(create_app(service), raise_server_exceptions=False)


GLOSSARY_KEYS = {"acme-key": "acme", "rival-key": "rival"}
AUTH = {"Authorization": "DeepL-Auth-Key acme-key"}
NOW = datetime(2026, 12, 4, 3, 4, 5, 678000, tzinfo=UTC)


@dataclass
class FakeGlossaryService:
    """What the glossary endpoints need of a service: keys of two tenants, a store and the languages."""

    glossaries: GlossaryStore
    metrics: Metrics = field(default_factory=Metrics)
    offered: tuple[Language, ...] = LANGUAGES

    def authenticate(self, key: str | None) -> Principal:
        if key in GLOSSARY_KEYS:
            return Principal(key=key, tenant=GLOSSARY_KEYS[key], priority="interactive")
        raise Unauthorized("invalid API key")

    def languages(self) -> list[Language]:
        return list(self.offered)
