"""Job settings; the lead hooks `JobsConfig` into `Settings` (e.g. as `Settings.jobs`)."""

from __future__ import annotations

from datetime import time
from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, field_validator

JobStoreBackend = Literal["sqlite"]
OffPeakSource = Literal["window", "forecast"]


class JobsConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = True
    backend: JobStoreBackend = "sqlite"
    path: Path | None = None  # None: `<data_dir>/jobs.sqlite3`; relative paths live under data_dir
    # Chunks in flight at once, each from a different job: jobs take turns chunk by chunk (see `FairQueue`).
    workers: int = Field(default=1, ge=1)
    # Jobs one tenant may have in the rotation at once; its later ones wait queued, so a tenant's backlog
    # cannot crowd another tenant's first job out of the rotation.
    max_active_jobs_per_tenant: int = Field(default=4, ge=1)
    chunk_segments: int = Field(default=16, ge=1)  # segments per translate call (and per durable commit)
    max_document_bytes: int = Field(default=20 * 1024 * 1024, ge=1)
    max_document_segments: int = Field(default=200_000, ge=1)  # the upload answers 413 beyond it
    max_batch_segments: int = Field(default=10_000, ge=1)
    max_batch_body_bytes: int = Field(default=16 * 1024 * 1024, ge=1)  # POST /v1/jobs JSON body
    idle_poll_s: float = Field(default=1.0, gt=0)  # how often an idle worker looks for jobs another process queued
    pause_poll_s: float = Field(default=0.5, gt=0)  # how often a paused worker re-checks interactive load
    retry_initial_s: float = Field(default=0.5, gt=0)
    retry_max_s: float = Field(default=30.0, gt=0)
    throughput_smoothing: float = Field(default=0.3, gt=0, le=1)  # EWMA weight of the newest chunk's rate
    # Deferrable jobs (`/v1/jobs` with `deferrable` and `latest_finish`) wait for this daily window of wall time
    # (wrapping midnight when the end is earlier), in `off_peak_timezone` (None: the machine's local time), or
    # until their latest start: `latest_finish` less their estimated run time less `defer_margin_s`.
    off_peak_start: time = time(1, 0)
    off_peak_end: time = time(6, 0)
    off_peak_timezone: str | None = None
    # "forecast": off-peak is what `peakgate autoscale` publishes from its forecast in the queue's Redis (`[queue]
    # backend = "redis"`), the window above while nothing fresh is published or Redis is out of reach; read at
    # most once per `off_peak_cache_s`, so claiming jobs costs no Redis round trip per job.
    off_peak_source: OffPeakSource = "window"
    off_peak_cache_s: float = Field(default=1.0, gt=0)
    defer_margin_s: float = Field(default=600.0, ge=0)
    defer_prior_segments_per_s: float = Field(default=5.0, gt=0)  # run-time estimate before one is measured

    @field_validator("off_peak_timezone")
    @classmethod
    def _known_zone(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                ZoneInfo(value)
            except (ZoneInfoNotFoundError, ValueError) as exc:
                raise ValueError(f"unknown time zone {value!r}") from exc
        return value
