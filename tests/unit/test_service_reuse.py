"""Service and translation memory on a FakeClock: another process's import reaches the fuzzy index."""

from __future__ import annotations

import asyncio
from pathlib import Path

from peakgate.backends.echo_backend import EchoBackend
from peakgate.clock import FakeClock
from peakgate.config import ModelConfig, Settings
from peakgate.memory import TmConfig, TranslationMemory
from peakgate.memory.tm import build_store
from peakgate.service import Service


async def test_rows_imported_elsewhere_reach_fuzzy_lookups_after_the_refresh_period(tmp_path: Path) -> None:
    settings = Settings(models=(ModelConfig(name="echo", engine="echo", source="en", target="es"),),
                        tiers={"medium": ("echo",)}, data_dir=tmp_path, tm=TmConfig(refresh_s=5.0))
    clock = FakeClock()
    service = Service(settings, clock=clock, backends={"echo": EchoBackend("echo", [("en", "es")])})
    await service.start()
    other = TranslationMemory(build_store(settings.tm, tmp_path / "tm.sqlite3"), settings.tm)  # `tm import`
    try:
        other.add("", "en", "es", "Open the settings window now", "Abra ahora la ventana de ajustes",
                  origin="human")
        memory = service.stores.memory
        assert memory is not None
        query = "Open the settings window later"
        assert memory.lookup("", "en", "es", query) is None  # not indexed in this process yet
        await asyncio.sleep(0)  # let the refresh task reach its first sleep on the fake clock
        clock.advance(5.0)
        for _ in range(50):  # the refresh runs on a worker thread
            await asyncio.sleep(0.01)
            if memory.lookup("", "en", "es", query) is not None:
                break
        found = memory.lookup("", "en", "es", query)
        assert found is not None and found.kind == "fuzzy"
    finally:
        other.close()
        await service.close()
