"""Job value types shared by the store, the runner and the HTTP layer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

JobKind = Literal["document", "batch", "image", "speech"]
# Media jobs (image, speech) start 'recognising' (OCR or ASR in the media pool, not the runner): they are queued
# for translation once `JobStore.recognised` has stored the text found.
JobStatus = Literal["recognising", "queued", "translating", "done", "error"]
TERMINAL: frozenset[JobStatus] = frozenset({"done", "error"})
MEDIA_KINDS: frozenset[JobKind] = frozenset({"image", "speech"})


@dataclass(frozen=True, slots=True)
class NewJob:
    """What a caller submits; the store assigns id, key and timestamps."""

    tenant: str
    kind: JobKind
    source: str | None  # None: detect per chunk
    target: str
    segments: tuple[str, ...]
    filename: str | None = None
    format: str | None = None  # codec name for documents ("txt", "html", "docx"); a media job's answer options
    input_data: bytes | None = None  # the original document (or image, audio), needed again to rebuild it
    deferrable: bool = False  # may wait for off-peak hours, finishing by `latest_finish`
    latest_finish: float | None = None  # wall-clock seconds since the epoch
    glossary_id: str | None = None  # applied to every segment, as on a synchronous request


@dataclass(frozen=True, slots=True)
class Job:
    id: str
    key: str  # DeepL `document_key`: a second secret, so knowing the id alone reads nothing
    tenant: str
    kind: JobKind
    status: JobStatus
    source: str | None
    target: str
    filename: str | None
    format: str | None
    billed_characters: int
    segments_total: int
    segments_done: int
    error_message: str | None
    created_at: float  # wall-clock seconds since the epoch
    updated_at: float
    deferrable: bool = False
    latest_finish: float | None = None
    glossary_id: str | None = None

    @property
    def segments_left(self) -> int:
        return self.segments_total - self.segments_done


@dataclass(frozen=True, slots=True)
class DeferralGate:
    """Which deferrable jobs may start now: every one off-peak, else those whose latest start has come
    (`latest_finish` less the segments left at `s_per_segment` less `margin_s`)."""

    off_peak: bool
    now_wall_s: float
    s_per_segment: float
    margin_s: float
