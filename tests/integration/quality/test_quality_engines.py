"""The decoding guards and the quality fallback on the real engines: the shipped int8 student and Apertium."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator

import pytest

from peakgate.backends.apertium import MODES_DIR, ApertiumBackend
from peakgate.backends.base import DecodeOptions
from peakgate.backends.ctranslate2_backend import CTranslate2Backend, DecodingGuards
from peakgate.config import REPO_MODELS_DIR, ModelConfig, Settings, default_models
from peakgate.domain import TranslateRequest
from peakgate.observe.metrics import Metrics
from peakgate.quality.estimate import loop_in, same_text
from peakgate.quality.fallback import QualityGate
from peakgate.quality.language import output_language
from peakgate.quality.settings import QualityConfig
from peakgate.service import Service

INT8 = REPO_MODELS_DIR / "student-en-es-int8"
STUDENT, RULES = "student-en-es-int8", "apertium-en-es"
GREEDY = DecodeOptions()
PAIR = ("en", "es")
LOOPING = "Could not get image width (bad TIFF file)"  # dev row: "(mmmmmmmm...TIFFFFFFFF" unguarded
SERVED = ModelConfig(name=STUDENT, engine="ctranslate2", source="en", target="es", path="student-en-es-int8",
                     inter_threads=1, intra_threads=2)
GUARDS = DecodingGuards(SERVED.max_decoding_length_ratio, SERVED.no_repeat_ngram_size, SERVED.repetition_penalty,
                        SERVED.length_group_size)

pytestmark = [
    pytest.mark.skipif(not (INT8 / "model.bin").is_file(), reason="the int8 student is not built (models build)"),
    pytest.mark.skipif(shutil.which("apertium") is None or not (MODES_DIR / "eng-spa.mode").is_file(),
                       reason="apertium eng-spa is not installed (.ci/run installs it)"),
]


@pytest.fixture
async def engines() -> AsyncIterator[tuple[CTranslate2Backend, CTranslate2Backend, ApertiumBackend]]:
    guarded = CTranslate2Backend("guarded", INT8, *PAIR, intra_threads=1, guards=GUARDS)
    plain = CTranslate2Backend("plain", INT8, *PAIR, intra_threads=1, guards=DecodingGuards.off())
    rules = ApertiumBackend(RULES, "eng-spa", *PAIR, pipelines=1)
    for engine in (guarded, plain, rules):
        await engine.start()
    yield guarded, plain, rules
    for engine in (guarded, plain, rules):
        await engine.close()


async def test_the_guards_stop_the_students_loop(
    engines: tuple[CTranslate2Backend, CTranslate2Backend, ApertiumBackend],
) -> None:
    guarded, plain, _rules = engines
    [loose] = await plain.translate_batch([LOOPING], *PAIR, GREEDY)
    [kept] = await guarded.translate_batch([LOOPING], *PAIR, GREEDY)
    assert loop_in(LOOPING, loose) is not None and len(loose) > 2.5 * len(LOOPING)
    assert loop_in(LOOPING, kept) is None and len(kept) < 2 * len(LOOPING), kept
    assert "TIFF" in kept


async def test_length_groups_keep_the_batch_order_and_each_sentence_as_alone(
    engines: tuple[CTranslate2Backend, CTranslate2Backend, ApertiumBackend],
) -> None:
    guarded = engines[0]
    batch = [LOOPING, *(f"Open file number {i}" for i in range(20)), "Save", "Delete the folder."]
    together = await guarded.translate_batch(batch, *PAIR, GREEDY)
    alone = [(await guarded.translate_batch([s], *PAIR, GREEDY))[0] for s in batch]
    assert together == alone
    assert all(guarded.confidence(s) is not None for s in batch)
    assert guarded.confidence("never translated") is None


async def test_the_gate_hands_failures_to_apertium_and_keeps_good_student_output(
    engines: tuple[CTranslate2Backend, CTranslate2Backend, ApertiumBackend],
) -> None:
    guarded, plain, rules = engines
    backends = {STUDENT: guarded, "plain": plain, RULES: rules}
    models = (SERVED, SERVED.model_copy(update={"name": "plain"}),
              ModelConfig(name=RULES, engine="apertium", source="en", target="es", mode="eng-spa"))
    metrics = Metrics()
    gate = QualityGate(QualityConfig(), models, metrics, backends, output_language())

    async def again(model: str, texts: list[str]) -> list[str]:
        return await backends[model].translate_batch(texts, *PAIR, GREEDY)

    sources = ["Hello", "Hello world", "Good morning", "Delete the folder."]
    first = await guarded.translate_batch(sources, *PAIR, GREEDY)
    assert same_text(sources[0], first[0])  # the student hands greetings back (why the gate exists)
    reviewed = await gate.review(sources, first, STUDENT, chain=(STUDENT, RULES), pair=PAIR, translate=again,
                                 split=False)
    assert reviewed.texts[:3] == ["Hola", "Hola Mundo", "Buenos días"]
    assert reviewed.models == [RULES, RULES, RULES, STUDENT]
    assert "carpeta" in reviewed.texts[3]
    [loose] = await plain.translate_batch([LOOPING], *PAIR, GREEDY)
    looped = await gate.review([LOOPING], [loose], "plain", chain=("plain", RULES), pair=PAIR, translate=again,
                               split=False)
    assert looped.models == [RULES] and loop_in(LOOPING, looped.texts[0]) is None
    assert metrics.registry.get_sample_value("peakgate_qe_fallbacks_total", {"model": "plain", "reason": "loop"}) == 1


async def test_the_service_serves_each_segment_from_the_engine_that_did_it_best() -> None:
    rules = ModelConfig(name=RULES, engine="apertium", source="en", target="es", mode="eng-spa")
    settings = Settings(models=(SERVED, rules), tiers={"medium": (STUDENT, RULES)})
    svc = Service(settings)
    await svc.start()
    try:
        request = TranslateRequest(("Hello", "Delete the folder."), "en", "es")
        result = await svc.translate(request, svc.authenticate(None))
    finally:
        await svc.close()
    assert [(t.model, t.tier) for t in result.translations] == [(RULES, "medium"), (STUDENT, "medium")]
    assert result.translations[0].text == "Hola" and "carpeta" in result.translations[1].text


@pytest.mark.skipif(not (REPO_MODELS_DIR / "student-en-es-large-int8" / "model.bin").is_file(),
                    reason="the large student is not built (models build --recipe student-en-es-large)")
async def test_the_large_tier_takes_a_second_and_a_third_opinion_down_its_chain() -> None:
    names = ("student-en-es-large-int8", STUDENT, RULES)
    models = tuple(m for m in default_models() if m.name in names)
    svc = Service(Settings(models=models, tiers={"large": names}, default_tier="large"))
    await svc.start()
    try:
        sources = ("Hello", "Good afternoon", "The file could not be saved.")
        result = await svc.translate(TranslateRequest(sources, "en", "es"), svc.authenticate(None))
    finally:
        await svc.close()
    # Both students hand "Hello" back, so the rules serve it; the large student's "Good afternoon" fails a
    # check and the small student's candidate fails fewer; the catalog sentence stays with the large student.
    assert [t.model for t in result.translations] == [RULES, STUDENT, "student-en-es-large-int8"]
    assert result.translations[0].text == "Hola"
    assert not any(same_text(s, t.text) for s, t in zip(sources, result.translations, strict=True))
    assert "archivo" in result.translations[2].text
