"""Streaming speech on a fake pool: endpointing by energy, partials as the transcript changes, then a final."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
import numpy as np
import pytest

from peakgate.api.contract import Language
from peakgate.domain import TranslateResult, Translation
from peakgate.errors import BadRequest, InputTooLarge, UnsupportedPair
from peakgate.media.asr import Word, hypothesis, recognise
from peakgate.media.audio import NoSpeech, to_pcm16
from peakgate.media.endpoint import Endpointer, split
from peakgate.media.speech import check_languages
from peakgate.media.speech_stream import Final, Partial, SpeechStream, StreamLimits, to_stream_pcm

RATE = 16000
LIMITS = StreamLimits(max_s=30.0, max_chunk_bytes=8000, partial_every_s=1.0, max_utterance_s=10.0)


def tone(seconds: float) -> bytes:
    return to_pcm16(0.3 * np.sin(2 * np.pi * 300.0 * np.arange(int(seconds * RATE)) / RATE))


def quiet(seconds: float) -> bytes:
    return bytes(2 * int(seconds * RATE))


def chunks(pcm: bytes, seconds: float = 0.1) -> list[bytes]:
    size = int(2 * RATE * seconds)
    return [pcm[i:i + size] for i in range(0, len(pcm), size)]


class FakePool:
    """Answers as PocketSphinx might, instantly: the open utterance is "please", a closed one "please open"."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, float, str]] = []

    async def run(self, kind: str, units: float, fn: Callable[..., Any], *args: object) -> Any:
        self.calls.append((kind, round(units, 2), fn.__name__))
        if fn is hypothesis:
            return "please"
        assert fn is recognise
        start = float(args[1])  # type: ignore[arg-type]
        return (Word("please", start + 0.05, start + 0.3), Word("open", start + 0.35, start + 0.6))

    def allows(self, feature: str) -> bool:
        return True


async def translate(segments: tuple[str, ...]) -> TranslateResult:
    return TranslateResult(tuple(Translation(f"<es>{s}", "en", "m", "medium") for s in segments), 0)


async def run_stream(pcm: bytes, pool: FakePool, limits: StreamLimits = LIMITS) -> list[msgspec.Struct]:
    sent: list[msgspec.Struct] = []

    async def send(message: msgspec.Struct) -> None:
        sent.append(message)

    stream = SpeechStream(pool, translate, send, limits, RATE)
    for chunk in chunks(pcm):
        await stream.feed(chunk)
    sent.append(await stream.finish())
    return sent


async def test_partials_as_the_transcript_changes_then_a_final() -> None:
    pool = FakePool()
    sent = await run_stream(tone(0.9) + quiet(0.7) + tone(0.6), pool)
    partials, final = sent[:-1], sent[-1]
    assert [p.transcript for p in partials if isinstance(p, Partial)] == ["please", "please open"]
    assert isinstance(final, Final)
    assert (final.transcript, final.translation) == ("please open please open", "<es>please open <es>please open")
    first, second = final.segments
    assert first.start_s == pytest.approx(0.05)
    assert second.start_s >= 1.4  # the second utterance keeps its place in the stream's time
    assert final.duration_s == pytest.approx(2.2)
    # One partial re-recognition of the open utterance, each closed utterance recognised once; all in the ASR lane.
    assert [name for _, _, name in pool.calls] == ["hypothesis", "recognise", "recognise"]
    assert {kind for kind, _, _ in pool.calls} == {"asr"}


async def test_silence_costs_no_recognition_and_ends_as_no_speech() -> None:
    pool = FakePool()
    with pytest.raises(NoSpeech):
        await run_stream(quiet(5.0), pool)
    assert pool.calls == []


def test_the_endpointer_keeps_only_a_lead_in_of_silence() -> None:
    endpointer = Endpointer(max_utterance_s=10.0)
    for chunk in chunks(quiet(5.0)):
        assert endpointer.feed(chunk) is None
    assert endpointer.pending_s <= 0.3 + 0.1
    assert endpointer.start_s >= 4.5


def test_a_whole_clip_splits_at_its_pauses() -> None:
    pieces = list(split(quiet(1.0) + tone(0.6) + quiet(0.7) + tone(0.6) + quiet(0.2), max_utterance_s=10.0))
    assert len(pieces) == 2
    assert 0.6 <= pieces[0].start_s <= 1.0  # the lead-in of silence is kept short, the time is kept right
    assert 1.7 <= pieces[1].start_s <= 2.3
    assert list(split(quiet(2.0), max_utterance_s=10.0)) == []


def test_a_long_utterance_is_cut_at_its_cap() -> None:
    endpointer = Endpointer(max_utterance_s=1.0)
    closed = [c for c in (endpointer.feed(chunk) for chunk in chunks(tone(2.5))) if c is not None]
    assert [round(c.start_s, 1) for c in closed] == [0.0, 1.0]


async def test_caps_on_chunks_and_stream_length() -> None:
    stream = SpeechStream(FakePool(), translate, _ignore, LIMITS, RATE)
    with pytest.raises(InputTooLarge, match="chunk of 16000 bytes"):
        await stream.feed(quiet(0.5))
    with pytest.raises(InputTooLarge, match="passed its 2 s audio limit"):
        await run_stream(quiet(3.0), FakePool(), StreamLimits(2.0, 8000, 1.0, 10.0))


async def _ignore(message: msgspec.Struct) -> None:
    return None


def test_other_sample_rates_are_resampled() -> None:
    assert len(to_stream_pcm(bytes(1600), 8000)) == 3200  # 0.1 s at 8 kHz -> 0.1 s at 16 kHz
    assert len(to_stream_pcm(bytes(3201), 16000)) == 3200  # a dangling odd byte is dropped


def test_languages_are_checked_before_any_audio() -> None:
    languages = [Language("en", "English", ("es", "ca")), Language("es", "Spanish", ("en",))]
    assert check_languages(None, " ES ", languages) == ("en", "es")
    with pytest.raises(BadRequest, match="'de' is not supported: the recogniser understands en only"):
        check_languages("de", "es", languages)
    with pytest.raises(UnsupportedPair, match="served targets: ca, es"):
        check_languages("en", "ja", languages)
