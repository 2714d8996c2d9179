"""Cutting speech into utterances where the speaker pauses, by frame energy (no engine needed).

Shared by the whole-file path and the stream: the recogniser is given one utterance at a time, which is what it
does best (on a long clip its live normalisation and language model drift, and accuracy drops by half).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from peakgate.media.audio import PCM_BYTES, SAMPLE_RATE, frame_dbfs, from_pcm16

BYTES_PER_S = SAMPLE_RATE * PCM_BYTES
UTTERANCE_GAP_S = 0.5  # a pause this long ends an utterance (and a segment to translate)
_FRAME_S = 0.03  # audio.frame_dbfs's frame
# Stricter than the "no speech at all" floor: room noise between words must count as a pause.
VOICE_FLOOR_DBFS = -40.0
_LEAD_IN_S = 0.3  # quiet audio kept before the first voiced frame, so the first phone is not clipped
_FEED_S = 0.1  # how a whole file is fed, as a stream would be


@dataclass(frozen=True, slots=True)
class Closed:
    """One utterance's 16 kHz PCM16 audio and where it starts in the whole."""

    pcm: bytes
    start_s: float


@dataclass
class Endpointer:
    """Buffers the open utterance; hands it back once a pause of `gap_s` follows speech (or it grows too long)."""

    max_utterance_s: float
    gap_s: float = UTTERANCE_GAP_S
    pending: bytearray = field(default_factory=bytearray)
    start_s: float = 0.0  # time where `pending` begins
    voiced: bool = False  # `pending` holds speech, not only the lead-in

    @property
    def pending_s(self) -> float:
        return len(self.pending) / BYTES_PER_S

    def feed(self, pcm: bytes) -> Closed | None:
        self.pending += pcm
        voiced = frame_dbfs(from_pcm16(bytes(self.pending)), SAMPLE_RATE) >= VOICE_FLOOR_DBFS
        self.voiced = bool(voiced.any())
        if not self.voiced:
            self._drop_lead(int(voiced.size * _FRAME_S * BYTES_PER_S) - int(_LEAD_IN_S * BYTES_PER_S))
            return None
        quiet_s = (voiced.size - 1 - int(voiced.nonzero()[0][-1])) * _FRAME_S
        if quiet_s >= self.gap_s or self.pending_s >= self.max_utterance_s:
            return self.close()
        return None

    def close(self) -> Closed | None:
        """The open utterance, if it holds speech (at the end of the audio, or when it grows too long)."""
        closed = Closed(bytes(self.pending), self.start_s) if self.voiced else None
        self.start_s += self.pending_s
        self.pending.clear()
        self.voiced = False
        return closed

    def _drop_lead(self, size: int) -> None:
        size -= size % PCM_BYTES
        if size > 0:
            del self.pending[:size]
            self.start_s += size / BYTES_PER_S


def split(pcm: bytes, max_utterance_s: float) -> Iterator[Closed]:
    """The utterances of a whole clip, as the stream would cut them."""
    endpointer = Endpointer(max_utterance_s)
    step = int(_FEED_S * BYTES_PER_S)
    for at in range(0, len(pcm), step):
        if (closed := endpointer.feed(pcm[at:at + step])) is not None:
            yield closed
    if (closed := endpointer.close()) is not None:
        yield closed
