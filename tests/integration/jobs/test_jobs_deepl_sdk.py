"""The official `deepl` SDK's document calls, unmodified, against a uvicorn server built from
`document_operations` only (a fake translate behind a real runner and a real SQLite store)."""

from __future__ import annotations

import asyncio
import time
import types
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import deepl
import deepl.translator
import pytest
from starlette.applications import Starlette

from bench._http import serve_in_thread
from peakgate.api.contract import Language
from peakgate.api.documents import document_operations
from peakgate.api.endpoint import to_route
from peakgate.clock import MonotonicClock
from peakgate.domain import Principal
from peakgate.errors import Unauthorized
from peakgate.glossary import GlossaryStore, build_glossary_store
from peakgate.jobs.config import JobsConfig
from peakgate.jobs.model import Job
from peakgate.jobs.runner import JobRunner
from peakgate.jobs.store import SqliteJobStore
from peakgate.observe.metrics import Metrics

KEY = "sdk-key"


async def upper(segments: Sequence[str], job: Job) -> list[str]:
    await asyncio.sleep(0.01)
    return [s.upper() for s in segments]


@dataclass
class Service:
    jobs: SqliteJobStore
    job_runner: JobRunner
    jobs_config: JobsConfig
    metrics: Metrics
    glossaries: GlossaryStore = field(default_factory=lambda: build_glossary_store("memory"))

    def languages(self) -> list[Language]:
        return [Language("en", "English", ("es", "de")), Language("es", "Spanish", ("en",))]

    async def check_job(self, segments: Sequence[str], source: str | None, target: str, principal: Principal
                        ) -> int:
        return sum(len(s) for s in segments)

    async def bill_job(self, principal: Principal, characters: int) -> None:
        return None

    def authenticate(self, key: str | None) -> Principal:
        if key != KEY:
            raise Unauthorized("invalid API key")
        return Principal(key=key, tenant="sdk", priority="interactive")


@pytest.fixture
def server_url(tmp_path: Path) -> Iterator[str]:
    config = JobsConfig(chunk_segments=4, idle_poll_s=0.05)
    store = SqliteJobStore(tmp_path / "jobs.db")
    runner = JobRunner(store, upper, MonotonicClock(), config=config)
    service = Service(store, runner, config, Metrics())

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        await runner.start()
        yield
        await runner.close()

    app = Starlette(routes=[to_route(op, service.metrics) for op in document_operations(service)],
                    lifespan=lifespan)
    with serve_in_thread(app) as url:
        yield url
    store.close()


@pytest.fixture
def fast_polling(monkeypatch: pytest.MonkeyPatch) -> None:
    # The SDK polls status every 5 s of real time; poll every 20 ms instead.
    shim = types.SimpleNamespace(time=time.time, sleep=lambda _s: time.sleep(0.02))
    monkeypatch.setattr(deepl.translator, "time", shim)


@pytest.mark.usefixtures("fast_polling")
def test_sdk_translate_document_round_trip(server_url: str, tmp_path: Path) -> None:
    source, target = tmp_path / "in.html", tmp_path / "out.html"
    lines = "".join(f"<p>paragraph {i}</p>\n" for i in range(30))
    source.write_text(f"<html><body>\n{lines}</body></html>")
    translator = deepl.Translator(KEY, server_url=server_url)
    status = translator.translate_document_from_filepath(source, target, source_lang="EN", target_lang="ES")
    assert status.done and status.billed_characters == sum(len(f"paragraph {i}") for i in range(30))
    assert target.read_text() == f"<html><body>\n{lines.upper().replace('<P>', '<p>').replace('</P>', '</p>')}" \
                                 "</body></html>"


def test_sdk_sees_a_wrong_document_key_as_an_authorization_failure(server_url: str) -> None:
    translator = deepl.Translator(KEY, server_url=server_url)
    handle = translator.translate_document_upload(b"hello", target_lang="DE", filename="a.txt")
    wrong = deepl.DocumentHandle(handle.document_id, "not-the-key")
    with pytest.raises(deepl.AuthorizationException):
        translator.translate_document_get_status(wrong)
    assert translator.translate_document_get_status(handle).ok
