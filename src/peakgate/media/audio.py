"""Audio files, checked before any engine sees them: type by content, size, duration from the header, silence.

`inspect` is cheap (the header only) and runs in the request handler, so a 2-hour WAV or a text file named
`.wav` is refused before it costs a decode. `decode` (in the media pool's process) turns the file into what the
recogniser takes: 16 kHz mono signed 16-bit little-endian PCM, and refuses a clip with no sound in it.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
import soundfile

from peakgate.errors import BadRequest, InputTooLarge

AudioFormat = Literal["wav", "flac", "ogg"]
SAMPLE_RATE = 16_000  # what the recogniser's acoustic model was trained on
PCM_BYTES = 2  # 16-bit samples
_WAV_FORMATS = {1: "PCM", 3: "IEEE float", 0xFFFE: "extensible"}
# A WAV written to a pipe cannot go back to fill its size in: writers leave 0, 0xFFFFFFFF, or (espeak-ng
# --stdout) 0x7FFFF000. Such a size means "to the end of the file"; two hours at 48 kHz stereo is below.
_UNKNOWN_SIZE_FROM = 0x7FFFF000
_FRAME_S = 0.03  # energy is judged over 30 ms frames, about one phone
# A frame this quiet is no speech: -50 dBFS is below room tone on a phone mic and above dithered silence.
SILENCE_FLOOR_DBFS = -50.0


class UnsupportedAudio(BadRequest):
    code = "unsupported_audio"


class NoSpeech(BadRequest):
    code = "no_speech"


@dataclass(frozen=True, slots=True)
class AudioInfo:
    format: AudioFormat
    duration_s: float
    sample_rate: int
    channels: int
    missing_bytes: int = 0  # audio a WAV header declares but the file lacks: a truncated upload


@dataclass(frozen=True, slots=True)
class AudioLimits:
    max_bytes: int
    max_s: float


def sniff(data: bytes) -> AudioFormat:
    """The container, by its magic bytes (never by the name or the declared content type)."""
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return "wav"
    if data[:4] == b"fLaC":
        return "flac"
    if data[:4] == b"OggS":
        return "ogg"
    raise UnsupportedAudio("the file is not WAV, FLAC or OGG audio (judged by its content, not its name)")


def inspect(data: bytes, limits: AudioLimits) -> AudioInfo:
    """Type, size and duration from the header alone; raises before anything is decoded."""
    if len(data) > limits.max_bytes:
        raise InputTooLarge(f"audio file of {len(data)} bytes is over the {limits.max_bytes}-byte limit")
    kind = sniff(data)
    info = _wav_header(data) if kind == "wav" else _sndfile_header(data, kind)
    if info.duration_s > limits.max_s:
        raise InputTooLarge(f"audio of {info.duration_s:.1f} s is over the {limits.max_s:g} s limit")
    if info.missing_bytes:  # after the cap: a header claiming two hours over a few bytes is refused as too long
        raise UnsupportedAudio(f"truncated WAV: the header declares {info.missing_bytes} more bytes of audio "
                               "than the file holds")
    if info.duration_s <= 0:
        raise NoSpeech("the audio is empty: no speech found")
    return info


def _chunks(data: bytes) -> dict[bytes, tuple[int, int]]:
    """RIFF chunk id -> (offset of its body, declared size); stops at the first chunk that runs off the end."""
    found: dict[bytes, tuple[int, int]] = {}
    at = 12
    while at + 8 <= len(data):
        chunk_id, size = data[at:at + 4], struct.unpack_from("<I", data, at + 4)[0]
        found.setdefault(chunk_id, (at + 8, size))
        if chunk_id == b"data":
            break  # audio runs to its end; whatever follows (LIST tags) does not change the duration
        at += 8 + size + (size & 1)  # chunks are padded to an even length
    return found


def _wav_header(data: bytes) -> AudioInfo:
    chunks = _chunks(data)
    if b"fmt " not in chunks or b"data" not in chunks:
        raise UnsupportedAudio("malformed WAV: no `fmt ` or `data` chunk")
    fmt_at, fmt_size = chunks[b"fmt "]
    if fmt_size < 16 or fmt_at + 16 > len(data):
        raise UnsupportedAudio("malformed WAV: its `fmt ` chunk is cut short")
    tag, channels, rate, byte_rate, _, bits = struct.unpack_from("<HHIIHH", data, fmt_at)
    if tag not in _WAV_FORMATS or channels == 0 or rate == 0 or byte_rate == 0 or bits == 0:
        raise UnsupportedAudio(f"unsupported WAV encoding (format tag {tag}, {channels} channels, {rate} Hz, "
                               f"{bits}-bit): send PCM or float WAV, FLAC or OGG")
    data_at, declared = chunks[b"data"]
    present = len(data) - data_at
    size = present if declared == 0 or declared >= _UNKNOWN_SIZE_FROM else declared
    return AudioInfo("wav", size / byte_rate, rate, channels, max(0, size - present))


def _sndfile_header(data: bytes, kind: AudioFormat) -> AudioInfo:
    try:
        info = soundfile.info(io.BytesIO(data))
    except (soundfile.LibsndfileError, RuntimeError) as exc:
        raise UnsupportedAudio(f"unreadable {kind.upper()} audio: {exc}") from exc
    if info.samplerate <= 0 or info.channels <= 0:
        raise UnsupportedAudio(f"unreadable {kind.upper()} audio: no sample rate or channels")
    return AudioInfo(kind, info.frames / info.samplerate, info.samplerate, info.channels)


def decode(data: bytes) -> bytes:
    """16 kHz mono PCM16 of a file `inspect` accepted; raises NoSpeech when no frame rises above the floor."""
    try:
        samples, rate = soundfile.read(io.BytesIO(data), dtype="float64", always_2d=True)
    except (soundfile.LibsndfileError, RuntimeError) as exc:
        raise UnsupportedAudio(f"undecodable audio: {exc}") from exc
    mono = resample(samples.mean(axis=1), int(rate), SAMPLE_RATE)
    if loudest_frame_dbfs(mono, SAMPLE_RATE) < SILENCE_FLOOR_DBFS:
        raise NoSpeech(f"no speech found: the audio never rises above {SILENCE_FLOOR_DBFS:g} dBFS")
    return to_pcm16(mono)


def resample(samples: npt.NDArray[np.float64], rate: int, to_rate: int) -> npt.NDArray[np.float64]:
    """Linear interpolation: on speech into a 16 kHz recogniser it scored no worse than a windowed-sinc
    low-pass before it (espeak-ng's 22.05 kHz, measured), and it needs no SciPy."""
    if rate == to_rate or samples.size == 0:
        return samples
    count = round(samples.size * to_rate / rate)
    out: npt.NDArray[np.float64] = np.interp(np.arange(count) * (rate / to_rate), np.arange(samples.size), samples)
    return out


def to_pcm16(samples: npt.NDArray[np.float64]) -> bytes:
    return (np.clip(samples, -1.0, 1.0) * 32767.0).astype("<i2").tobytes()


def from_pcm16(pcm: bytes) -> npt.NDArray[np.float64]:
    return np.frombuffer(pcm[:len(pcm) - len(pcm) % PCM_BYTES], dtype="<i2").astype(np.float64) / 32768.0


def frame_dbfs(samples: npt.NDArray[np.float64], rate: int) -> npt.NDArray[np.float64]:
    """RMS level of each whole 30 ms frame, in dB relative to full scale (-inf for digital silence)."""
    size = max(1, int(rate * _FRAME_S))
    count = samples.size // size
    if count == 0:
        return np.full(1, _rms_dbfs(samples))
    frames = samples[:count * size].reshape(count, size)
    with np.errstate(divide="ignore"):
        levels: npt.NDArray[np.float64] = 20.0 * np.log10(np.sqrt(np.mean(frames * frames, axis=1)))
    return levels


def loudest_frame_dbfs(samples: npt.NDArray[np.float64], rate: int) -> float:
    return float(np.max(frame_dbfs(samples, rate))) if samples.size else float("-inf")


def _rms_dbfs(samples: npt.NDArray[np.float64]) -> float:
    if samples.size == 0:
        return float("-inf")
    rms = float(np.sqrt(np.mean(samples * samples)))
    return 20.0 * float(np.log10(rms)) if rms > 0 else float("-inf")
