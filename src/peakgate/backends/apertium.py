"""Apertium: long-lived null-flush pipelines (the way APy serves), restarted when they die.

The pipelines are the model's replicas: a failed batch is retried once on another one, and a pipeline whose
failures stand out from its peers' is ejected for a while (outlier ejection) when a detector is given.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Sequence
from pathlib import Path

from peakgate.backends.apertium_format import deformat, reformat
from peakgate.backends.base import CostModel, DecodeOptions, Health
from peakgate.errors import BackendError, BadRequest, EngineCrashed, EngineTimeout, Unavailable
from peakgate.resilience.outlier import OutlierDetector

MODES_DIR = Path("/usr/share/apertium/modes")
_NUL = b"\0"


async def null_flush_command(mode: str, modes_dir: Path = MODES_DIR) -> str:
    """The mode's shell pipeline with `-z` on every stage (`apertium-wblank-mode -z`)."""
    mode_file = modes_dir / f"{mode}.mode"
    if not mode_file.is_file():
        raise Unavailable(f"apertium mode {mode!r} is not installed ({mode_file} missing)")
    try:
        proc = await asyncio.create_subprocess_exec(
            "apertium-wblank-mode", "-z", str(mode_file),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
    except OSError as exc:
        raise Unavailable("apertium is not installed (apertium-wblank-mode not found)") from exc
    out, err = await proc.communicate()
    if proc.returncode != 0:
        raise Unavailable(f"apertium-wblank-mode failed: {err.decode(errors='replace')}")
    return out.decode().strip()


class Pipeline:
    """One running pipeline process; segments go in `\\0`-terminated and come back the same way."""

    def __init__(self, command: str, timeout_s: float) -> None:
        self._command = command
        self._timeout_s = timeout_s
        self._proc: asyncio.subprocess.Process | None = None
        self.lock = asyncio.Lock()
        self.restarts = -1

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    async def start(self) -> None:
        await self.kill()
        # `$1=-n` is `apertium -u` (no unknown-word marks); its own session so kill reaches every stage.
        self._proc = await asyncio.create_subprocess_exec(
            "bash", "-c", self._command, "apertium", "-n", "",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, start_new_session=True,
        )
        self.restarts += 1

    async def kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()

    async def run(self, chunks: Sequence[bytes]) -> list[bytes]:
        """Stream all chunks through; writer and reader run together so pipes never fill up."""
        proc = self._proc
        if proc is None or proc.stdin is None or proc.stdout is None or proc.returncode is not None:
            raise EngineCrashed("apertium pipeline is not running")
        stdin, stdout = proc.stdin, proc.stdout

        async def write() -> None:
            for chunk in chunks:
                stdin.write(chunk + _NUL)
                await stdin.drain()

        async def read() -> list[bytes]:
            return [(await stdout.readuntil(_NUL))[:-1] for _ in chunks]

        try:
            async with asyncio.timeout(self._timeout_s * max(1, len(chunks))):
                _, outputs = await asyncio.gather(write(), read())
        except TimeoutError as exc:
            await self.kill()
            raise EngineTimeout(f"apertium pipeline took over {self._timeout_s}s per segment") from exc
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError) as exc:
            await self.kill()
            raise EngineCrashed("apertium pipeline died mid-batch") from exc
        return outputs


class ApertiumBackend:
    """An Apertium mode (e.g. `eng-spa`) served by `pipelines` long-lived processes."""

    def __init__(
        self, name: str, mode: str, source: str, target: str,
        *, pipelines: int = 1, timeout_s: float = 10.0, max_batch_size: int = 64,
        outliers: OutlierDetector | None = None,
    ) -> None:
        self._name = name
        self._mode = mode
        self._pair = (source, target)
        self._n_pipelines = max(1, pipelines)
        self._timeout_s = timeout_s
        self._max_batch_size = max_batch_size
        self._pipelines: list[Pipeline] = []
        self._next = 0
        self._warm = False
        self._outliers = outliers  # replicas named by pipeline index: "0", "1", ...

    @property
    def name(self) -> str:
        return self._name

    @property
    def pairs(self) -> frozenset[tuple[str, str]]:
        return frozenset({self._pair})

    @property
    def pipelines(self) -> list[Pipeline]:
        return self._pipelines

    async def start(self) -> None:
        command = await null_flush_command(self._mode)
        self._pipelines = [Pipeline(command, self._timeout_s) for _ in range(self._n_pipelines)]
        for pipe in self._pipelines:
            await pipe.start()
        await self.translate_batch(["Hello."], *self._pair, DecodeOptions())
        self._warm = True

    def cost_model(self) -> CostModel:
        return CostModel(self._max_batch_size, (8, 32), self._warm)

    def health(self) -> Health:
        if not self._pipelines:
            return Health.DOWN
        alive = sum(p.alive for p in self._pipelines)
        if alive == len(self._pipelines) and not self.ejected():
            return Health.OK
        # Dead pipelines restart on the next batch and ejected ones come back, so this is degraded, not down.
        return Health.DEGRADED

    async def translate_batch(
        self, segments: Sequence[str], source: str, target: str, options: DecodeOptions
    ) -> list[str]:
        if (source, target) != self._pair:
            raise BadRequest(f"{self._name} translates {self._pair[0]}->{self._pair[1]}, not {source}->{target}")
        if not self._pipelines:
            raise Unavailable(f"{self._name} is not started")
        if any("\0" in s for s in segments):
            raise BadRequest("segments must not contain NUL characters")
        chunks = [deformat(s).encode() for s in segments]
        pipe = self._pick()
        try:
            outputs = await self._run_on(pipe, chunks)
        except EngineCrashed:
            outputs = await self._run_on(self._pick(avoid=pipe), chunks)  # retry once, elsewhere if possible
        return [reformat(o.decode("utf-8", errors="replace")) for o in outputs]

    def _pick(self, avoid: Pipeline | None = None) -> Pipeline:
        usable = self._in_service()
        usable = [p for p in usable if p is not avoid] or usable
        for pipe in usable:
            if not pipe.lock.locked():
                return pipe
        self._next = (self._next + 1) % len(usable)
        return usable[self._next]

    def _in_service(self) -> list[Pipeline]:
        if self._outliers is None:
            return self._pipelines
        names = self._outliers.available([str(i) for i in range(len(self._pipelines))])
        return [self._pipelines[int(name)] for name in names] or self._pipelines

    async def _run_on(self, pipe: Pipeline, chunks: list[bytes]) -> list[bytes]:
        """Run a batch on one pipeline, restarting it first if it died; the outcome counts for that replica."""
        async with pipe.lock:
            try:
                if not pipe.alive:
                    await pipe.start()
                outputs = await pipe.run(chunks)
            except BackendError:
                self._record(pipe, ok=False)
                raise
        self._record(pipe, ok=True)
        return outputs

    def _record(self, pipe: Pipeline, *, ok: bool) -> None:
        if self._outliers is not None:
            self._outliers.record(str(self._pipelines.index(pipe)), ok)

    def ejected(self) -> list[int]:
        """Indices of the pipelines outlier ejection has taken out of service now."""
        return [] if self._outliers is None else sorted(int(name) for name in self._outliers.ejected())

    async def close(self) -> None:
        for pipe in self._pipelines:
            await pipe.kill()
        self._pipelines = []
        self._warm = False
