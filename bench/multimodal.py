"""Multimodal isolation: interactive text p99 alone, and with a concurrent flood of images (and speech), in one run.

    python -m bench.multimodal [--echo] [--duration 15] [--rounds 3] [--text-clients 2] [--image-clients 4]
                               [--speech-clients 2] [--image-lines 8]

One peakgate server (the int8 student for text, or `--echo`; cache off, so repeats do not help) serves every
phase. Each round measures `--text-clients` closed-loop interactive clients (one dev sentence each, made
distinct) for `--duration` s alone, then again while `--image-clients` clients post rendered images to
/v1/image (OCR + overlay) and `--speech-clients` post espeak-ng speech to /v1/speech (when the server serves it
and espeak-ng is installed), each flooding client waiting out a 503's Retry-After (at most 1 s). Printed: text
p50/p99 alone and flooded, the p99 ratio per round and its median, what the floods got done and refused, and
the machine's load (the run shares its cores with whatever else runs: say so beside the figures).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import io
import json
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from PIL import Image, ImageDraw, ImageFont

from bench._common import default_dev_path, load_dev
from bench._http import LoadResult, closed_loop, scrape, serve
from bench.overload import CACHE_OFF, ECHO_CONFIG, model_config

DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
LINES = ("Please keep your luggage with you at all times.", "The museum opens at nine in the morning.",
         "Tickets are sold at the main entrance.", "Children under twelve travel for free.",
         "The next train leaves from platform four.", "Do not leave bags unattended in the station.",
         "Smoking is not allowed inside the building.", "Ask our staff if you need any help.")
SPOKEN = "the next train leaves from platform four"
_MAX_RETRY_WAIT_S = 1.0
_WARMUP_S = 2.0  # a flood runs this long before text is timed beside it


@dataclass
class Flood:
    """What one kind of flood got: statuses and the latencies of its successes."""

    path: str
    statuses: Counter[int] = field(default_factory=Counter)
    latencies_s: list[float] = field(default_factory=list)

    def line(self, seconds: float) -> str:
        done = self.statuses[200]
        p50 = statistics.median(self.latencies_s) if self.latencies_s else float("nan")
        others = {k: v for k, v in sorted(self.statuses.items()) if k != 200}
        return f"{self.path}: {done} done ({done / seconds:.2f}/s, p50 {p50:.2f} s), refused/other {others}"


def render_image(lines: int) -> bytes:
    """A sign: `lines` English sentences in DejaVu Sans, black on white, as PNG."""
    image = Image.new("RGB", (1100, 40 + 56 * lines), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.truetype(str(DEJAVU), 30) if DEJAVU.is_file() else ImageFont.load_default(30)
    for i in range(lines):
        draw.text((30, 24 + 56 * i), LINES[i % len(LINES)], font=font, fill="black")
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def speak(text: str) -> bytes | None:
    """A WAV of `text` from espeak-ng, or None when it is not installed."""
    if shutil.which("espeak-ng") is None:
        return None
    return subprocess.run(["espeak-ng", "--stdout", "-v", "en-us", "-s", "130", "-p", "40", text], check=True,
                          capture_output=True, timeout=30).stdout


def text_bodies(count: int) -> list[dict[str, object]]:
    rows = load_dev(default_dev_path(), limit=400)
    texts = [r.en for r in rows] or list(LINES)
    return [{"segments": [f"{texts[i % len(texts)]} ({i})"], "source": "en", "target": "es",
             "priority": "interactive"} for i in range(count)]


@dataclass(frozen=True)
class FloodSpec:
    path: str
    upload: tuple[str, bytes, str]  # file name, bytes, content type
    fields: dict[str, str]
    clients: int


def flood_for(url: str, specs: Sequence[FloodSpec], seconds: float) -> list[Flood]:
    """Every spec's clients flooding for `seconds` (run in its own process: the flood's client work must not
    delay the text clients' event loop, or its cost would read as server latency)."""
    return asyncio.run(_floods(url, specs, seconds))


async def _floods(url: str, specs: Sequence[FloodSpec], seconds: float) -> list[Flood]:
    stop = asyncio.Event()
    floods = [Flood(spec.path) for spec in specs]
    tasks = [asyncio.create_task(_flood(url, flood, spec, stop))
             for flood, spec in zip(floods, specs, strict=True) for _ in range(spec.clients)]
    await asyncio.sleep(seconds)
    stop.set()
    await asyncio.gather(*tasks)
    return floods


async def _flood(url: str, flood: Flood, spec: FloodSpec, stop: asyncio.Event) -> None:
    """Post, again and again, until `stop` (each client posts at least once)."""
    async with httpx.AsyncClient(base_url=url, timeout=120.0) as client:
        while True:
            started = time.perf_counter()
            try:
                reply = await client.post(spec.path, files={"file": spec.upload}, data=spec.fields)
                flood.statuses[reply.status_code] += 1
            except httpx.HTTPError:
                flood.statuses[-1] += 1
                reply = None
            if reply is not None and reply.status_code == 200:
                flood.latencies_s.append(time.perf_counter() - started)
            if stop.is_set():
                return
            if reply is not None and reply.status_code in (429, 503):
                await asyncio.sleep(min(_MAX_RETRY_WAIT_S, float(reply.headers.get("retry-after", "1"))))


async def _text_phase(url: str, bodies: Sequence[dict[str, object]], clients: int, seconds: float,
                      specs: Sequence[FloodSpec]) -> tuple[LoadResult, list[Flood]]:
    loop = asyncio.get_running_loop()
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as flooder:
        floods = loop.run_in_executor(flooder, flood_for, url, specs, _WARMUP_S + seconds) if specs else None
        if floods is not None:
            await asyncio.sleep(_WARMUP_S)  # the flood process starts and reaches its steady state
        stop = asyncio.Event()
        text = asyncio.create_task(closed_loop(url, bodies, clients, stop=stop))
        await asyncio.sleep(seconds)
        stop.set()
        return await text, (await floods if floods is not None else [])


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def _serves_speech(url: str) -> bool:
    return "/v1/speech" in httpx.get(f"{url}/openapi.json", timeout=10).json().get("paths", {})


async def run(url: str, args: argparse.Namespace) -> list[float]:
    bodies = text_bodies(4000)
    image = ("sign.png", render_image(args.image_lines), "image/png")
    wav = speak(SPOKEN) if args.speech_clients and _serves_speech(url) else None
    specs = [FloodSpec("/v1/image", image, {"target": "es", "source": "en", "overlay": "true"}, args.image_clients)]
    if wav is not None:
        specs.append(FloodSpec("/v1/speech", ("speech.wav", wav, "audio/wav"), {"target": "es"},
                               args.speech_clients))
    else:
        print("speech flood: skipped (no /v1/speech on the server, espeak-ng missing, or --speech-clients 0)")
    # The pool's processes start (and load their engines) on first use: warm them, as a serving process is.
    warm = await asyncio.to_thread(flood_for, url, [dataclasses.replace(spec, clients=1) for spec in specs], 0.0)
    print("warm-up: " + ", ".join(f"{f.path} {dict(f.statuses)}" for f in warm))
    ratios, totals = [], [Flood(spec.path) for spec in specs]
    for round_no in range(1, args.rounds + 1):
        alone, _ = await _text_phase(url, bodies, args.text_clients, args.duration, [])
        flooded, floods = await _text_phase(url, bodies, args.text_clients, args.duration, specs)
        for total, flood in zip(totals, floods, strict=True):
            total.statuses.update(flood.statuses)
            total.latencies_s.extend(flood.latencies_s)
        ratio = flooded.percentile(0.99) / alone.percentile(0.99)
        ratios.append(ratio)
        print(f"round {round_no}: text alone p50 {_ms(alone.percentile(0.5))} p99 {_ms(alone.percentile(0.99))} "
              f"({alone.done} req, {alone.errors} errors) | with flood p50 {_ms(flooded.percentile(0.5))} "
              f"p99 {_ms(flooded.percentile(0.99))} ({flooded.done} req, {flooded.errors} errors) | "
              f"p99 ratio {ratio:.2f}x")
    for total in totals:
        print(total.line(args.rounds * (args.duration + _WARMUP_S)))
    refused = {dict(labels).get("kind", "?") + "/" + dict(labels).get("reason", "?"): value
               for (name, labels), value in scrape(url).items() if name == "peakgate_media_refused_total"}
    print(f"media pool refusals (peakgate_media_refused_total): {refused or 'none'}")
    print(f"interactive text p99 with flood / alone: median {statistics.median(ratios):.2f}x over {args.rounds} "
          f"round(s); machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the end")
    return ratios


def server_config(echo: bool, media: dict[str, object]) -> dict[str, object]:
    base = ECHO_CONFIG if echo else model_config()
    return dict(base) | {"log_level": "warning", "data_dir": None, "cache": CACHE_OFF, "media": media}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--echo", action="store_true", help="echo engine for text (no model needed)")
    parser.add_argument("--duration", type=float, default=15.0, help="seconds per phase")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--text-clients", type=int, default=2)
    parser.add_argument("--image-clients", type=int, default=4)
    parser.add_argument("--speech-clients", type=int, default=2)
    parser.add_argument("--image-lines", type=int, default=8)
    parser.add_argument("--log", type=Path, default=None, help="write the server's output to this file")
    parser.add_argument("--media", type=json.loads, default={}, help='MediaConfig fields as JSON, e.g. {"nice": 0}')
    args = parser.parse_args(argv)
    with serve(server_config(args.echo, args.media), ready_s=180.0, log=args.log) as server:
        asyncio.run(run(server.url, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
