"""Streaming speech: PCM chunks in, partial transcripts out as they change, a final with translations at the end.

Audio is cut into utterances where the speaker pauses (`media.endpoint`). Every recognition runs in the media
pool's ASR lane, statelessly: a closed utterance is recognised once (it is then stable, and translated at once);
the open one is re-recognised for a partial each `partial_every_s` of new audio.
The pool rather than a thread per socket: PocketSphinx holds the GIL while it decodes, so decoding in the server
process would slow the text path, and the pool's audio-seconds admission is what sheds a flood of streams. The
cost of re-recognising the open utterance is bounded by `max_utterance_s`, after which it is closed regardless.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

import msgspec

from peakgate.errors import InputTooLarge
from peakgate.media.asr import as_utterance, hypothesis, recognise
from peakgate.media.audio import PCM_BYTES, SAMPLE_RATE, NoSpeech, from_pcm16, resample, to_pcm16
from peakgate.media.endpoint import BYTES_PER_S, Closed, Endpointer
from peakgate.media.pool import Feature, Kind
from peakgate.media.speech import SegmentOut, Translator, translate_utterances

T = TypeVar("T")


class Runner(Protocol):
    """The media pool's interface (`peakgate.media.pool.MediaPool`)."""

    async def run(self, kind: Kind, units: float, fn: Callable[..., T], *args: object) -> T: ...

    def allows(self, feature: Feature) -> bool: ...


class StreamStart(msgspec.Struct, kw_only=True):
    target: str
    source: str | None = None  # None: en, the only language recognised so far
    sample_rate: int = SAMPLE_RATE
    type: str = "start"


class Partial(msgspec.Struct):
    transcript: str  # stable utterances, then the open one's current hypothesis
    translation: str  # of the stable utterances only
    type: str = "partial"


class Final(msgspec.Struct):
    transcript: str
    translation: str
    segments: list[SegmentOut]
    duration_s: float
    type: str = "final"


@dataclass(frozen=True, slots=True)
class StreamLimits:
    max_s: float  # audio per stream
    max_chunk_bytes: int
    partial_every_s: float
    max_utterance_s: float


def to_stream_pcm(chunk: bytes, sample_rate: int) -> bytes:
    """A client's PCM16 chunk at its own rate, as 16 kHz PCM16 (chunks are resampled one by one)."""
    if sample_rate == SAMPLE_RATE:
        return chunk[:len(chunk) - len(chunk) % PCM_BYTES]
    return to_pcm16(resample(from_pcm16(chunk), sample_rate, SAMPLE_RATE))


class SpeechStream:
    """One socket's recognition state; `send` delivers a message to the client."""

    def __init__(self, pool: Runner, translate: Translator, send: Callable[[msgspec.Struct], Awaitable[None]],
                 limits: StreamLimits, sample_rate: int) -> None:
        self._pool, self._translate, self._send, self._limits = pool, translate, send, limits
        self._rate = sample_rate
        self._endpointer = Endpointer(limits.max_utterance_s)
        self._stable: list[SegmentOut] = []
        self._received_s = 0.0
        self._since_partial_s = 0.0
        self._last_partial = ""

    async def feed(self, chunk: bytes) -> None:
        if len(chunk) > self._limits.max_chunk_bytes:
            raise InputTooLarge(f"audio chunk of {len(chunk)} bytes is over the "
                                f"{self._limits.max_chunk_bytes}-byte limit")
        pcm = to_stream_pcm(chunk, self._rate)
        self._received_s += len(pcm) / BYTES_PER_S
        if self._received_s > self._limits.max_s:
            raise InputTooLarge(f"the stream passed its {self._limits.max_s:g} s audio limit")
        self._since_partial_s += len(pcm) / BYTES_PER_S
        closed = self._endpointer.feed(pcm)
        if closed is not None:
            await self._settle(closed)
            await self._partial("")
        elif self._since_partial_s >= self._limits.partial_every_s and self._endpointer.voiced:
            pending = bytes(self._endpointer.pending)
            await self._partial(await self._pool.run("asr", len(pending) / BYTES_PER_S, hypothesis, pending))

    async def finish(self) -> Final:
        closed = self._endpointer.close()
        if closed is not None:
            await self._settle(closed)
        if not self._stable:
            raise NoSpeech("no speech found in the stream")
        return Final(self._joined("text"), self._joined("translation"), list(self._stable),
                     round(self._received_s, 2))

    async def _settle(self, closed: Closed) -> None:
        """Recognise a closed utterance and translate it: it will not change again."""
        words = await self._pool.run("asr", len(closed.pcm) / BYTES_PER_S, recognise, closed.pcm, closed.start_s)
        heard = as_utterance(words)
        if heard is not None:
            segments, _ = await translate_utterances(self._translate, (heard,))
            self._stable.extend(segments)

    async def _partial(self, open_text: str) -> None:
        self._since_partial_s = 0.0
        transcript = " ".join(t for t in (self._joined("text"), open_text) if t)
        if transcript and transcript != self._last_partial:
            self._last_partial = transcript
            await self._send(Partial(transcript, self._joined("translation")))

    def _joined(self, attribute: str) -> str:
        return " ".join(getattr(segment, attribute) for segment in self._stable)
