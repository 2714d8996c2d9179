"""Audio files are judged by content and header before any decode; decoding gives 16 kHz mono PCM16."""

from __future__ import annotations

import io
import struct

import numpy as np
import pytest
import soundfile

from peakgate.errors import InputTooLarge
from peakgate.media.audio import (
    SAMPLE_RATE,
    AudioLimits,
    NoSpeech,
    UnsupportedAudio,
    decode,
    from_pcm16,
    inspect,
    sniff,
)

LIMITS = AudioLimits(max_bytes=10 * 1024 * 1024, max_s=600.0)


def tone(seconds: float, rate: int, channels: int = 1, amplitude: float = 0.3) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    wave = amplitude * np.sin(2 * np.pi * 440.0 * t)
    return np.repeat(wave[:, None], channels, axis=1) if channels > 1 else wave


def encoded(samples: np.ndarray, rate: int, fmt: str, subtype: str | None = None) -> bytes:
    buffer = io.BytesIO()
    soundfile.write(buffer, samples, rate, format=fmt, subtype=subtype)
    return buffer.getvalue()


def wav_header(rate: int, data_bytes: int, channels: int = 1) -> bytes:
    """A canonical 44-byte PCM16 header declaring `data_bytes` of audio."""
    fmt = struct.pack("<HHIIHH", 1, channels, rate, rate * channels * 2, channels * 2, 16)
    riff_size = min(36 + data_bytes, 0xFFFFFFFF)
    return (b"RIFF" + struct.pack("<I", riff_size) + b"WAVE" + b"fmt " + struct.pack("<I", 16) + fmt
            + b"data" + struct.pack("<I", data_bytes))


@pytest.mark.parametrize(("fmt", "subtype", "kind"), [("WAV", "PCM_16", "wav"), ("FLAC", None, "flac"),
                                                      ("OGG", "VORBIS", "ogg")])
def test_each_container_is_recognised_with_its_duration(fmt: str, subtype: str | None, kind: str) -> None:
    info = inspect(encoded(tone(1.5, 22050), 22050, fmt, subtype), LIMITS)
    assert (info.format, info.sample_rate, info.channels) == (kind, 22050, 1)
    assert info.duration_s == pytest.approx(1.5, abs=0.01)


def test_a_text_file_named_wav_is_refused_by_its_content() -> None:
    with pytest.raises(UnsupportedAudio, match="not WAV, FLAC or OGG"):
        inspect(b"hello, this is not audio at all\n" * 10, LIMITS)
    with pytest.raises(UnsupportedAudio):
        sniff(b"RIFF\x00\x00\x00\x00AVI LIST")  # RIFF, but not WAVE


def test_a_two_hour_header_is_refused_before_any_decode() -> None:
    # Two hours at 16 kHz declared, a second present: the cap answers from the header.
    data = wav_header(16000, 2 * 3600 * 16000 * 2) + b"\x00" * 32000
    with pytest.raises(InputTooLarge, match=r"7200\.0 s is over the 600 s limit"):
        inspect(data, LIMITS)


def test_a_truncated_wav_is_refused() -> None:
    whole = encoded(tone(2.0, 16000), 16000, "WAV", "PCM_16")
    with pytest.raises(UnsupportedAudio, match="truncated WAV"):
        inspect(whole[:len(whole) // 2], LIMITS)
    with pytest.raises(UnsupportedAudio, match="malformed WAV"):
        inspect(whole[:30], LIMITS)  # the fmt chunk itself is cut


def test_a_streamed_wav_without_a_size_uses_the_bytes_present() -> None:
    data = wav_header(16000, 0xFFFFFFFF) + b"\x01\x00" * 16000
    assert inspect(data, LIMITS).duration_s == pytest.approx(1.0)


def test_size_cap_and_empty_audio() -> None:
    with pytest.raises(InputTooLarge, match="bytes is over the 100-byte limit"):
        inspect(wav_header(16000, 1000) + b"\x00" * 1000, AudioLimits(max_bytes=100, max_s=600.0))
    with pytest.raises(NoSpeech, match="empty"):
        inspect(wav_header(16000, 0), LIMITS)


def test_unsupported_wav_encoding_names_what_is_accepted() -> None:
    data = bytearray(wav_header(8000, 800) + b"\x00" * 800)
    data[20:22] = struct.pack("<H", 6)  # A-law
    with pytest.raises(UnsupportedAudio, match="send PCM or float WAV, FLAC or OGG"):
        inspect(bytes(data), LIMITS)


def test_decode_gives_16khz_mono_pcm16() -> None:
    pcm = decode(encoded(tone(1.0, 44100, channels=2), 44100, "FLAC"))
    samples = from_pcm16(pcm)
    assert samples.size == SAMPLE_RATE
    assert float(np.max(np.abs(samples))) == pytest.approx(0.3, abs=0.01)  # both channels averaged, level kept


def test_silence_is_no_speech() -> None:
    with pytest.raises(NoSpeech, match="no speech found"):
        decode(encoded(np.zeros(16000), 16000, "WAV", "PCM_16"))
    with pytest.raises(NoSpeech):  # a faint hiss, well under the floor, is still silence
        decode(encoded(np.random.default_rng(1).normal(0, 0.0005, 16000), 16000, "WAV", "PCM_16"))
