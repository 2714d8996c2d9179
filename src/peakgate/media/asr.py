"""Speech recognition with PocketSphinx (offline; its US English model ships in the PyPI wheel).

The entry points (`transcribe_file`, `hypothesis`) are module-level functions of plain arguments, so the media
pool can pickle them into its worker processes; the engine never runs on the server's event loop.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pocketsphinx import Decoder

from peakgate.media.audio import SAMPLE_RATE, NoSpeech, decode
from peakgate.media.endpoint import BYTES_PER_S, split

MODEL = "pocketsphinx-en-us"
LANGUAGES = ("en",)  # the languages the shipped model recognises
_FRAMES_PER_S = 100  # PocketSphinx's default frame rate (-frate)
_ALTERNATE = re.compile(r"\(\d+\)$")  # "to(3)": the dictionary's third pronunciation of "to"


@dataclass(frozen=True, slots=True)
class Word:
    text: str
    start_s: float
    end_s: float


@dataclass(frozen=True, slots=True)
class Utterance:
    text: str
    start_s: float
    end_s: float


@dataclass(frozen=True, slots=True)
class Transcript:
    utterances: tuple[Utterance, ...]
    duration_s: float

    @property
    def text(self) -> str:
        return " ".join(u.text for u in self.utterances)


@dataclass(frozen=True, slots=True)
class _Engine:
    decoder: Decoder
    cmn_init: str  # the cepstral mean it starts from


@functools.cache
def _engine() -> _Engine:
    # One per worker process, kept: loading the model takes about a second, decoding a short clip less.
    decoder = Decoder(samprate=SAMPLE_RATE, loglevel="FATAL")
    return _Engine(decoder, str(decoder.config["cmninit"]))


def _is_word(token: str) -> bool:
    # <s>, </s>, <sil> mark silence; [NOISE]-style tokens are fillers, not speech.
    return not (token.startswith(("<", "[")) or token.startswith("++"))


def recognise(pcm: bytes, offset_s: float = 0.0) -> tuple[Word, ...]:
    """Words of one utterance of 16 kHz mono PCM16 audio with their times (seconds from `offset_s`)."""
    engine = _engine()
    # Each utterance starts from the same normalisation: the result must not depend on what the process heard
    # before (another caller's audio), and the live estimate carried over was measured to hurt, not help.
    engine.decoder.set_cmn(engine.cmn_init)
    engine.decoder.start_utt()
    engine.decoder.process_raw(pcm, full_utt=True)
    engine.decoder.end_utt()
    return tuple(Word(_ALTERNATE.sub("", seg.word), offset_s + seg.start_frame / _FRAMES_PER_S,
                      offset_s + (seg.end_frame + 1) / _FRAMES_PER_S)
                 for seg in engine.decoder.seg() if _is_word(seg.word))


def as_utterance(words: Sequence[Word]) -> Utterance | None:
    """The words of one utterance (cut at pauses by `media.endpoint`) as its text and times; None if empty."""
    if not words:
        return None
    return Utterance(" ".join(w.text for w in words), words[0].start_s, words[-1].end_s)


def transcribe_file(data: bytes, max_utterance_s: float) -> Transcript:
    """Decode an accepted file (`audio.inspect`), cut it at pauses and recognise each utterance."""
    pcm = decode(data)
    heard = [u for piece in split(pcm, max_utterance_s) if (u := as_utterance(recognise(piece.pcm, piece.start_s)))]
    if not heard:
        raise NoSpeech("no speech found: the recogniser heard no words")
    return Transcript(tuple(heard), len(pcm) / BYTES_PER_S)


def hypothesis(pcm: bytes) -> str:
    """The current best text of an unfinished utterance (a streaming partial)."""
    return " ".join(word.text for word in recognise(pcm))


def word_error_rate(reference: str, hypothesis: str) -> float:
    """Word-level edit distance over the reference's length (case and punctuation ignored)."""
    ref, hyp = _words(reference), _words(hypothesis)
    if not ref:
        return 0.0 if not hyp else 1.0
    row = list(range(len(hyp) + 1))
    for i, ref_word in enumerate(ref, 1):
        diagonal, row[0] = row[0], i
        for j, hyp_word in enumerate(hyp, 1):
            diagonal, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, diagonal + (ref_word != hyp_word))
    return row[-1] / len(ref)


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())
