"""Limits for the long tasks (OCR of images, ASR of speech): file caps, the media pool's size, queue and ladder.

Units are in the names: bytes, megapixels (MP, 10^6 pixels), seconds of audio. See docs/multimodal.md.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

_MIB = 1024 * 1024


class MediaConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    # Files: refused (4xx) before any engine sees them.
    image_max_bytes: int = Field(default=20 * _MIB, gt=0)
    image_max_megapixels: float = Field(default=40.0, gt=0)  # read from the header, before any pixel is decoded
    # Larger images, and longer audio, up to the caps above, are answered as an async job (202 and a status URL;
    # 413 if `jobs.enabled` is off). At most `max_recognising_jobs` jobs per app wait for, or are in, OCR or ASR
    # at once (their files are held in memory meanwhile); past it, 503 + Retry-After.
    image_sync_max_megapixels: float = Field(default=4.0, gt=0)
    audio_max_bytes: int = Field(default=50 * _MIB, gt=0)
    audio_max_s: float = Field(default=600.0, gt=0)
    audio_sync_max_s: float = Field(default=30.0, gt=0)
    max_recognising_jobs: int = Field(default=16, ge=1)
    # Streaming speech (/v1/speech/stream): audio per socket, bytes per binary message, how much new audio earns
    # a re-recognised partial, and the longest utterance before it is cut (bounds each partial's re-decode).
    stream_max_s: float = Field(default=300.0, gt=0)
    stream_max_chunk_bytes: int = Field(default=64 * 1024, gt=0)
    stream_partial_every_s: float = Field(default=1.0, gt=0)
    stream_max_utterance_s: float = Field(default=15.0, gt=0)
    stream_start_timeout_s: float = Field(default=10.0, gt=0)  # a socket without its start message by then is closed
    # The media pool: separate processes per kind, so OCR and ASR never hold the text path's event loop or cores.
    ocr_concurrency: int = Field(default=1, ge=1)
    asr_concurrency: int = Field(default=1, ge=1)
    # Admission by work, not by request: units waiting or running per kind beyond these answer 503 + Retry-After.
    max_queued_megapixels: float = Field(default=32.0, gt=0)
    max_queued_audio_s: float = Field(default=300.0, gt=0)
    nice: int = Field(default=10, ge=0, le=19)  # OS priority increment of the pool's processes: text goes first
    # Degradation ladder levels (peakgate_degradation_level, 1 = L1 .. 4 = CACHE_ONLY; 5 = never) at and above
    # which the extras are refused: the drawn overlay first, then streaming speech, before text is touched.
    overlay_off_level: int = Field(default=1, ge=1, le=5)
    stream_off_level: int = Field(default=2, ge=1, le=5)
    # OCR: tesseract's language data (None: the Debian package's directory), the languages read when the
    # source is "auto" (tesseract's codes, "+"-joined: each one more costs time), words kept from this confidence.
    tessdata_dir: Path | None = None
    ocr_auto_languages: str = "eng"
    ocr_min_confidence: float = Field(default=30.0, ge=0, le=100)

    @model_validator(mode="after")
    def _check_caps(self) -> MediaConfig:
        if self.image_sync_max_megapixels > self.image_max_megapixels:
            raise ValueError("image_sync_max_megapixels must not exceed image_max_megapixels")
        if self.audio_sync_max_s > self.audio_max_s:
            raise ValueError("audio_sync_max_s must not exceed audio_max_s")
        return self
