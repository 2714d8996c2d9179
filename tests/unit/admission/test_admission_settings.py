"""AdmissionConfig, and the backend it picks."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from peakgate.admission.admission import build_backend
from peakgate.admission.local import LocalBackend
from peakgate.admission.shared import SharedBackend
from peakgate.clock import FakeClock
from peakgate.config import Settings
from peakgate.observe.metrics import Metrics


@pytest.mark.parametrize("share", [0.0, -0.5, 1.5])
def test_fallback_share_is_a_fraction_of_the_rate(share: float) -> None:
    with pytest.raises(ValidationError, match="fallback_share"):
        Settings(admission={"fallback_share": share})


async def test_the_backend_follows_the_config_and_redis_is_not_dialled_before_use() -> None:
    assert isinstance(build_backend(Settings(), FakeClock(), Metrics()), LocalBackend)
    metrics = Metrics()
    backend = build_backend(Settings(admission={"backend": "redis", "redis_url": "redis://127.0.0.1:1/0"}),
                            FakeClock(), metrics)
    assert isinstance(backend, SharedBackend) and not backend.on_fallback
    assert metrics.registry.get_sample_value("peakgate_admission_fallback") == 0.0
    await backend.close()
