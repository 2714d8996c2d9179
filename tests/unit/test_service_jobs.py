"""Service.check_job / bill_job: jobs and documents checked at submission with the synchronous rules, and billed."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from peakgate.backends.echo_backend import EchoBackend
from peakgate.clock import FakeClock
from peakgate.config import BatcherConfig, KeyConfig, LimitsConfig, ModelConfig, Settings
from peakgate.domain import TranslateRequest
from peakgate.errors import BadRequest, InputTooLarge, QuotaExceeded, UnsupportedPair
from peakgate.service import Service

KEY = "job-key"


@pytest.fixture
async def svc() -> AsyncIterator[Service]:
    settings = Settings(
        models=(ModelConfig(name="en-es", engine="echo", source="en", target="es"),
                ModelConfig(name="es-en", engine="echo", source="es", target="en"),
                ModelConfig(name="untiered", engine="echo", source="en", target="fr")),
        tiers={"medium": ("en-es", "es-en")}, default_tier="medium",
        batcher=BatcherConfig(max_queue_delay_ms=0.0),  # the FakeClock never advances a batching delay
        limits=LimitsConfig(max_segment_chars=40, max_segments=3, max_request_chars=100),
        keys=(KeyConfig(key=KEY, tenant="t", quota_chars=200, rate_chars_per_s=1, burst_chars=10),),
    )
    backends = {"en-es": EchoBackend("en-es", [("en", "es")]), "es-en": EchoBackend("es-en", [("es", "en")]),
                "untiered": EchoBackend("untiered", [("en", "fr")])}
    service = Service(settings, clock=FakeClock(), backends=backends)
    await service.start()
    yield service
    await service.close()


Job = tuple[tuple[str, ...], str | None, str]  # (segments, source, target)


@pytest.mark.parametrize(("job", "error", "says"), [
    ((("ok", "a\0b"), "en", "es"), BadRequest, "segment 1 contains a NUL character"),
    ((("ok", "\ud800"), "en", "es"), BadRequest, "segment 1 is not valid UTF-8"),
    ((("x" * 41,), "en", "es"), InputTooLarge, "segment 0 has 41 characters; the limit is 40"),
    ((("ok",), "en", ""), BadRequest, "target language is required"),
    ((("ok",), "en", "xx"), UnsupportedPair,
     r"no model serves en->xx, directly or through a pivot language \(es, en\); served pairs: en->es, es->en$"),
    ((("ok",), None, "xx"), UnsupportedPair, "no model translates into xx; served targets: en, es"),
    ((("ok",), "de", "es"), UnsupportedPair, "no model serves de->es"),
    ((("ok",), "en", "fr"), UnsupportedPair, "no model serves en->fr"),  # in no tier: only an explicit model
], ids=["nul", "surrogate", "long", "no-target", "pair", "target", "source", "untiered"])
async def test_a_job_is_refused_as_a_synchronous_request_would_be(svc: Service, job: Job, error: type[Exception],
                                                                  says: str) -> None:
    with pytest.raises(error, match=says):
        await svc.check_job(*job, svc.authenticate(KEY))


async def test_per_request_count_and_size_limits_do_not_cap_a_job(svc: Service) -> None:
    segments = ["x" * 40] * 4  # 4 > max_segments and 160 > max_request_chars: fine for a job
    assert await svc.check_job(segments, None, "es", svc.authenticate(KEY)) == 160
    assert await svc.check_job([], "es", "en", svc.authenticate(KEY)) == 0  # an empty document is valid


async def test_jobs_are_charged_to_the_quota_but_not_the_rate_buckets(svc: Service) -> None:
    who = svc.authenticate(KEY)
    with pytest.raises(QuotaExceeded, match="this request needs 201"):
        await svc.check_job(["x" * 40] * 5 + ["y"], "en", "es", who)
    assert (await svc.usage(who)).character_count == 0
    await svc.bill_job(who, await svc.check_job(["x" * 40] * 4, "en", "es", who))
    assert (await svc.usage(who)).character_count == 160
    result = await svc.translate(TranslateRequest(("hello",), "en", "es"), who)  # bucket (burst 10) untouched
    assert result.billed_characters == 5
    with pytest.raises(QuotaExceeded):
        await svc.check_job(["x" * 40], "en", "es", who)
