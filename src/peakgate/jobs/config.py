"""Job settings; the lead hooks `JobsConfig` into `Settings` (e.g. as `Settings.jobs`)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

JobStoreBackend = Literal["sqlite"]


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
