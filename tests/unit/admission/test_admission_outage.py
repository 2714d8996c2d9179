"""The outage state (when to try Redis again) and the outage quota book (last shared count + queued spend)."""

from __future__ import annotations

from peakgate.admission.backend import OverQuota
from peakgate.admission.metrics import AdmissionMetrics
from peakgate.admission.outage import Outage, OutageBook
from peakgate.clock import FakeClock
from peakgate.config import KeyConfig
from peakgate.errors import Unavailable
from peakgate.observe.metrics import Metrics


def test_an_outage_is_probed_once_per_retry_interval_and_ends_on_success() -> None:
    clock, metrics = FakeClock(), Metrics()
    outage = Outage(clock, 2.0, AdmissionMetrics(metrics.registry), share=0.5)
    assert outage.may_try() and not outage.active
    outage.failed(Unavailable("down"))
    assert outage.active and not outage.may_try()
    assert metrics.registry.get_sample_value("peakgate_admission_fallback") == 1.0
    clock.advance(2.0)
    assert outage.may_try()  # this caller probes ...
    assert not outage.may_try()  # ... and the others do not pile on meanwhile
    outage.recovered()
    assert not outage.active and outage.may_try()
    assert metrics.registry.get_sample_value("peakgate_admission_fallback") == 0.0


def test_the_book_counts_the_last_shared_count_plus_local_spend() -> None:
    book = OutageBook((KeyConfig(key="k", tenant="t", quota_chars=100),))
    book.seen("k", 70)
    book.record("k", 20)
    assert book.usage("k") == (90, 100)
    assert book.refusal("k", 11) == OverQuota(90, 100)
    assert book.refusal("k", 10) is None
    book.record(None, 5)  # the anonymous principal: counted, never refused
    assert book.usage(None) == (5, 0)


def test_queued_spend_is_frozen_into_one_batch_until_sent() -> None:
    book = OutageBook((KeyConfig(key="k", tenant="t", quota_chars=100),))
    assert book.batch() is None
    book.record("k", 20)
    first = book.batch()
    assert first is not None and dict(first.spend) == {"k": 20}
    book.record("k", 5)
    assert book.batch() is first  # a failed replay is retried as the same batch (same id: added once)
    assert book.usage("k") == (25, 100)
    book.sent(first)
    book.sent(first)  # a concurrent caller's second `sent` adds nothing
    assert book.usage("k") == (25, 100)
    second = book.batch()
    assert second is not None and second.batch_id != first.batch_id and dict(second.spend) == {"k": 5}
