"""While the shared ledger is out of reach: when to try it again, and the quotas this gateway keeps meanwhile."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from peakgate.admission.backend import OverQuota
from peakgate.admission.metrics import AdmissionMetrics
from peakgate.admission.quota import Quotas
from peakgate.clock import Clock
from peakgate.config import KeyConfig
from peakgate.errors import Unavailable

_log = logging.getLogger(__name__)


class Outage:
    """Whether the shared ledger is out of reach, and when to try it again.

    During an outage the ledger is tried at most once every `retry_s`, by one caller at a time: the others go on
    deciding locally instead of each paying a connect timeout.
    """

    def __init__(self, clock: Clock, retry_s: float, metrics: AdmissionMetrics, share: float) -> None:
        self._clock = clock
        self._retry_s = retry_s
        self._metrics = metrics
        self._share = share
        self._active = False
        self._retry_at = 0.0

    @property
    def active(self) -> bool:
        return self._active

    def may_try(self) -> bool:
        if not self._active:
            return True
        now = self._clock.now()
        if now < self._retry_at:
            return False
        self._retry_at = now + self._retry_s  # this caller probes; the others stay local until it is back
        return True

    def failed(self, exc: Unavailable) -> None:
        self._metrics.redis_errors.inc()
        self._retry_at = self._clock.now() + self._retry_s
        if not self._active:
            self._active = True
            self._metrics.fallback.set(1)
            _log.warning("shared admission unreachable, limiting locally at %.0f %% of every rate until it is "
                         "back: %s", 100 * self._share, exc.message)

    def recovered(self) -> None:
        if self._active:
            self._active = False
            self._metrics.fallback.set(0)
            _log.info("shared admission reachable again: limits and quotas are shared again")


@dataclass(frozen=True)
class SpendBatch:
    """Characters billed locally during an outage, to be added to the ledger once, under `batch_id`."""

    batch_id: str
    spend: Mapping[str | None, int]


class OutageBook:
    """Quotas as the shared ledger last reported them, plus what this gateway billed since it became unreachable.

    That spend is queued as it is billed and replayed into the ledger (`batch`, `sent`) before the ledger is used
    again, so nothing billed during an outage is lost. While the ledger is reachable nothing is queued and the
    book only remembers each key's last shared count. A key never seen since the gateway started counts from 0.
    """

    def __init__(self, keys: Iterable[KeyConfig]) -> None:
        self._unsent = Quotas(keys)  # local spend not yet in a batch; knows the limits
        self._seen: dict[str | None, int] = {}
        self._batch: SpendBatch | None = None

    def seen(self, key: str | None, used: int) -> None:
        self._seen[key] = used

    def refusal(self, key: str | None, characters: int) -> OverQuota | None:
        return self._unsent.refusal(key, characters, billed_elsewhere=self._elsewhere(key))

    def record(self, key: str | None, characters: int) -> None:
        self._unsent.record(key, characters)

    def usage(self, key: str | None) -> tuple[int, int]:
        unsent, limit = self._unsent.usage(key)
        return self._elsewhere(key) + unsent, limit

    def reset(self) -> None:
        self._unsent.reset()
        self._seen.clear()
        self._batch = None

    def batch(self) -> SpendBatch | None:
        """The spend to replay: the batch a failed replay left (same id: replaying it twice adds it once), else
        everything unsent, frozen under a fresh id."""
        if self._batch is None:
            spend = self._unsent.drain()
            if spend:
                self._batch = SpendBatch(uuid.uuid4().hex, spend)
        return self._batch

    def sent(self, batch: SpendBatch) -> None:
        if batch is not self._batch:
            return  # a concurrent caller replayed it (once: same id) and counted it already
        for key, characters in batch.spend.items():
            self._seen[key] = self._seen.get(key, 0) + characters
        self._batch = None

    def _elsewhere(self, key: str | None) -> int:
        queued = self._batch.spend.get(key, 0) if self._batch is not None else 0
        return self._seen.get(key, 0) + queued
