"""Speech against the real served process: espeak-ng speaks, PocketSphinx (in the media pool) hears, Apertium
translates; over POST /v1/speech and the /v1/speech/stream WebSocket. Bad files answer 4xx, the server stays
healthy (issue 25)."""

from __future__ import annotations

import io
import json
import shutil
import struct
import subprocess
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import numpy as np
import pytest
import soundfile
from websockets.sync.client import connect

from bench._http import Server, serve
from peakgate.media.asr import word_error_rate
from peakgate.media.audio import decode

KEY = "speech-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
VOICE = ("-v", "en-us", "-s", "130", "-p", "40")  # what PocketSphinx hears best of espeak-ng's voices
# PocketSphinx's small model hears espeak-ng's synthetic voice poorly on many sentences (measured over eight:
# mean WER 0.63; "please open the file" comes back as "please go and apply you", WER 1.0). These two it hears
# well alone (WER 0.0 and 0.2). Spoken together, a second apart, measured: 0.3 mean over POST /v1/speech
# ("where is the train station", "the mornings are you"), 0.4 over the stream (its cuts fall elsewhere).
SENTENCES = ("where is the train station", "good morning how are you")
MAX_MEAN_WER = 0.5


@pytest.fixture(scope="module")
def server(apertium_config: dict[str, object]) -> Iterator[Server]:
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed (scripts/dev-setup installs it)")
    config: dict[str, object] = {
        **apertium_config, "keys": [{"key": KEY, "tenant": "acme"}],
        # Room for one clip of the flood test's at a time (and for each of the other tests' clips).
        "media": {"max_queued_audio_s": 6.0},
    }
    with serve(config) as running:
        yield running


def speak(text: str) -> bytes:
    return subprocess.run(["espeak-ng", "--stdout", *VOICE, text], check=True, capture_output=True,
                          timeout=30).stdout


def wav(samples: np.ndarray, rate: int = 16000) -> bytes:
    out = io.BytesIO()
    soundfile.write(out, samples, rate, format="WAV", subtype="PCM_16")
    return out.getvalue()


def post(server: Server, data: bytes, name: str = "clip.wav", **fields: str) -> httpx.Response:
    return httpx.post(f"{server.url}/v1/speech", headers=AUTH, timeout=60,
                      files={"file": (name, data, "audio/wav")}, data={"target": "es", **fields})


def test_synthesised_speech_is_transcribed_and_translated(server: Server) -> None:
    # Two sentences with a second's pause between them: one request, two utterances, two translated segments.
    clips = [np.frombuffer(decode(speak(s)), dtype="<i2") for s in SENTENCES]
    pause = np.zeros(16000, dtype="<i2")
    reply = post(server, wav(np.concatenate([clips[0], pause, clips[1]])), source="en",
                 reference=" ".join(SENTENCES))
    assert reply.status_code == 200, reply.text
    body = reply.json()
    segments = body["segments"]
    wers = [word_error_rate(s, seg["text"]) for s, seg in zip(SENTENCES, segments, strict=False)]
    print(f"\nheard {[seg['text'] for seg in segments]}; WER per sentence {wers}, whole {body['wer']}")
    assert len(segments) == 2
    assert sum(wers) / len(wers) <= MAX_MEAN_WER
    first_s = len(clips[0]) / 16000  # the second sentence starts a second after the first clip ends
    assert segments[0]["end_s"] <= first_s + 0.1 and first_s + 0.8 <= segments[1]["start_s"] <= first_s + 1.5
    assert all(seg["translation"] and seg["translation"] != seg["text"] for seg in segments)
    assert (body["model"], body["translation_model"]) == ("pocketsphinx-en-us", "apertium-en-es")
    assert body["billed_characters"] == sum(len(seg["text"]) for seg in segments)


def test_a_clip_over_the_sync_cap_becomes_a_job_that_transcribes_and_translates(
        server: Server, finished_job: Callable[..., dict[str, Any]]) -> None:
    # The two sentences, a second apart, then silence to 35 s: over the 30 s answered while the client waits.
    pcm = np.frombuffer(decode(speak(SENTENCES[0])) + bytes(32000) + decode(speak(SENTENCES[1])), dtype="<i2")
    padded = np.concatenate([pcm, np.zeros(35 * 16000 - len(pcm), dtype="<i2")])
    started = time.perf_counter()
    status = finished_job(server, post(server, wav(padded), source="en", reference=" ".join(SENTENCES)), AUTH)
    assert status["status"] == "done", status
    result = status["result"]
    wers = [word_error_rate(s, seg["text"]) for s, seg in zip(SENTENCES, result["segments"], strict=False)]
    print(f"\njob heard {result['transcript']!r} in {time.perf_counter() - started:.1f} s; WER per sentence "
          f"{wers}, whole {result['wer']}")
    assert len(result["segments"]) == 2 and sum(wers) / len(wers) <= MAX_MEAN_WER
    assert all(seg["translation"] and seg["translation"] != seg["text"] for seg in result["segments"])
    assert result["translation"] == " ".join(seg["translation"] for seg in result["segments"])
    assert result["duration_s"] == 35.0 and result["model"] == "pocketsphinx-en-us"
    assert status["billed_characters"] == result["billed_characters"] == sum(
        len(seg["text"]) for seg in result["segments"])


def test_a_silent_clip_over_the_sync_cap_is_a_job_whose_status_says_why_it_failed(
        server: Server, finished_job: Callable[..., dict[str, Any]]) -> None:
    status = finished_job(server, post(server, wav_header(16000, 40 * 32000) + bytes(40 * 32000), "forty-s.wav"),
                          AUTH)
    assert status["status"] == "error" and "no speech found" in status["error_message"], status
    assert "result" not in status
    assert httpx.get(f"{server.url}/healthz", timeout=10).status_code == 200


def test_the_stream_yields_partials_then_a_final(server: Server) -> None:
    pcm = decode(speak(SENTENCES[1])) + bytes(16000) + decode(speak(SENTENCES[0]))
    messages: list[dict[str, Any]] = []
    with connect(f"{server.url.replace('http', 'ws')}/v1/speech/stream?api_key={KEY}", open_timeout=10) as ws:
        ws.send(json.dumps({"type": "start", "target": "es", "sample_rate": 16000}))
        for at in range(0, len(pcm), 8000):  # quarter-second chunks, at the pace of speech
            ws.send(pcm[at:at + 8000])
            time.sleep(0.25)
        ws.send(json.dumps({"type": "end"}))
        ended = time.perf_counter()
        while not messages or messages[-1]["type"] not in ("final", "error"):
            messages.append(json.loads(ws.recv(timeout=60)))
        final_ms = (time.perf_counter() - ended) * 1000
    kinds = [m["type"] for m in messages]
    print(f"\nstream: {[(m['type'], m['transcript']) for m in messages]}; the last message {final_ms:.0f} ms "
          "after the end message")
    assert kinds[-1] == "final" and kinds.count("partial") >= 1, kinds
    final = messages[-1]
    assert len(final["segments"]) == 2 and final["translation"]
    wers = [word_error_rate(s, seg["text"]) for s, seg in zip(SENTENCES[::-1], final["segments"], strict=True)]
    print(f"stream WER per sentence {wers}")
    assert sum(wers) / len(wers) <= MAX_MEAN_WER


def test_a_flood_of_audio_is_shed_while_text_stays_fast(server: Server) -> None:
    clip = wav(np.frombuffer(decode(speak(f"{SENTENCES[0]}. {SENTENCES[1]}. {SENTENCES[0]}")), dtype="<i2"))
    with ThreadPoolExecutor(6) as pool:
        flood = [pool.submit(post, server, clip) for _ in range(6)]
        time.sleep(0.5)  # the flood is in: one clip decoding, the rest refused
        started = time.perf_counter()
        text = httpx.post(f"{server.url}/v1/translate", headers=AUTH, timeout=30,
                          json={"segments": ["The house is small"], "source": "en", "target": "es"})
        text_s = time.perf_counter() - started
        replies = [future.result() for future in flood]
    statuses = [reply.status_code for reply in replies]
    print(f"\nflood statuses {statuses}; text answered in {text_s * 1000:.0f} ms")
    assert text.status_code == 200 and text_s < 5.0
    assert 200 in statuses and 503 in statuses and set(statuses) <= {200, 503}
    refused = next(reply for reply in replies if reply.status_code == 503)
    assert "asr queue is full" in refused.json()["error"]["message"] and int(refused.headers["Retry-After"]) >= 1
    metrics = httpx.get(f"{server.url}/metrics", timeout=10).text
    assert 'peakgate_media_refused_total{kind="asr",reason="queue_full"}' in metrics


def wav_header(rate: int, data_bytes: int) -> bytes:
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)
    return b"RIFF" + struct.pack("<I", 36 + data_bytes) + b"WAVE" + b"fmt \x10\x00\x00\x00" + fmt + b"data" + \
        struct.pack("<I", data_bytes)


BAD_INPUTS = ["two-hours", "silence", "text-named-wav", "truncated", "german"]


@pytest.mark.parametrize("case", ids=BAD_INPUTS, argvalues=[
    ("two-hours.wav", wav_header(16000, 2 * 3600 * 32000) + bytes(32000), {}, 413, "7200.0 s is over the 600 s"),
    ("silence.wav", wav(np.zeros(32000)), {}, 400, "no speech found"),
    ("notes.wav", b"just some text, named like audio\n" * 20, {}, 400, "not WAV, FLAC or OGG"),
    ("cut.wav", wav(np.zeros(32000))[:20000], {}, 400, "truncated WAV"),
    ("clip.wav", wav(np.zeros(32000)), {"source": "de"}, 400, "understands en only"),
])
def test_bad_input_is_a_clear_4xx_and_the_server_stays_healthy(
        server: Server, case: tuple[str, bytes, dict[str, str], int, str]) -> None:
    name, data, fields, status, says = case
    reply = post(server, data, name, **fields)
    assert reply.status_code == status, reply.text
    assert says in reply.json()["error"]["message"]
    assert httpx.get(f"{server.url}/healthz", timeout=10).status_code == 200
