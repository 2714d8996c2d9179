"""What a surge run observed: one record per arrival, the follow-up polls, the target's samples."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from peakgate.drills.scrape import Sample

# Outcomes without an HTTP status (negative or zero, so they never collide with one).
TIMEOUT = 0  # no answer within the client's limit
CONN_ERROR = -1  # the connection failed, or the answer was not HTTP
CANCELLED = -2  # still in flight when the drain time ran out
DROPPED = -3  # never sent: the generator's outstanding cap was full (the generator's limit, not the server's)
SHED = frozenset({429, 503})


def outcome_name(status: int) -> str:
    return {TIMEOUT: "timeout", CONN_ERROR: "connection error", CANCELLED: "cancelled at drain",
            DROPPED: "generator-dropped"}.get(status, str(status))


@dataclass(slots=True)
class Record:
    index: int
    kind: str
    klass: str
    tenant: str
    phase: str
    at_s: float  # scheduled arrival, seconds from the start
    segments: int
    status: int | None = None  # None while in flight
    latency_s: float | None = None  # from the scheduled arrival to the answer
    retry_after: bool = False
    degraded: str | None = None  # the X-Peakgate-Degraded header
    job: str | None = None  # documents and batch jobs: done, error, pending (drain ended first), untracked
    job_s: float | None = None  # from the arrival to the job's 'done'

    @property
    def accepted(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def shed(self) -> bool:
        return self.status in SHED


@dataclass(slots=True)
class FollowUps:
    """Status polls of documents and batch jobs (not arrivals: they are not offered load)."""

    polls: int = 0
    refusals: int = 0  # 429/503 answers to polls
    refusals_with_retry_after: int = 0
    errors: int = 0


@dataclass
class RunResult:
    target: str
    profile_name: str
    seed: int
    started_at: str  # wall-clock ISO 8601, for the report's reader
    duration_s: float
    drain_s: float
    ended_s: float  # when the run actually ended, drain included
    max_lag_s: float  # the worst delay of a send behind its schedule
    records: list[Record]
    followups: FollowUps
    samples: list[Sample]
    scrape_failures: int
    job_sample_every: int = 1  # 1 in this many accepted jobs was polled to completion (0: none)


@dataclass
class Tally:
    """Running totals for the live progress line; cheap per event."""

    offered: int = 0
    accepted: int = 0
    shed: int = 0
    errors: int = 0
    dropped: int = 0
    recent: deque[tuple[float, float]] = field(default_factory=lambda: deque(maxlen=4096))

    def finished(self, record: Record) -> None:
        if record.status == DROPPED:
            self.dropped += 1
        elif record.accepted:
            self.accepted += 1
            if record.klass == "interactive" and record.latency_s is not None:
                self.recent.append((record.at_s, record.latency_s))
        elif record.shed:
            self.shed += 1
        else:
            self.errors += 1

    def recent_p99(self, now_s: float, window_s: float = 5.0) -> float | None:
        """p99 of the interactive answers to arrivals of the last `window_s` seconds."""
        latencies = sorted(lat for at, lat in self.recent if at >= now_s - window_s)
        return latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))] if latencies else None


@dataclass(frozen=True, slots=True)
class Progress:
    elapsed_s: float
    offered_rps: float  # the profile's rate right now
    tally: Tally
    p99_s: float | None
