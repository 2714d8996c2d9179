"""The cost model: the spot cap, markets, per-key attribution, the Prometheus export."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from peakgate.control.cost import (
    IDLE,
    CostConfig,
    CostKey,
    CostLedger,
    CostMeter,
    InstanceType,
    attribute,
    burst_market,
    price_per_s,
)

A = CostKey("student-en-es-int8", "tiny", "acme", "/v2/translate")
B = CostKey("student-en-es-int8", "large", "globex", "/v2/document")


def config(spot_per_hour: float, **kwargs: object) -> CostConfig:
    return CostConfig.model_validate({"instance": InstanceType(name="x", on_demand_per_hour=1.0,
                                                               spot_per_hour=spot_per_hour), **kwargs})


def test_the_spot_cap_defaults_to_70_percent_of_on_demand() -> None:
    assert CostConfig().spot_price_cap == 0.70
    assert burst_market(config(0.70)) == "spot"
    assert burst_market(config(0.7001)) == "on-demand"  # over the cap: the burst goes on-demand
    assert burst_market(config(0.30, spot=False)) == "on-demand"
    assert burst_market(config(0.75, spot_price_cap=0.8)) == "spot"


def test_prices_are_per_second() -> None:
    assert price_per_s(config(0.36), "on-demand") == pytest.approx(1 / 3600)
    assert price_per_s(config(0.36), "spot") == pytest.approx(0.0001)


def test_cost_is_attributed_by_the_work_served() -> None:
    assert attribute(9.0, {A: 2.0, B: 1.0}) == pytest.approx({A: 6.0, B: 3.0})
    assert attribute(9.0, {A: 2.0, B: 0.0}) == {A: 9.0}
    assert attribute(9.0, {}) == {IDLE: 9.0}


def test_the_ledger_totals_by_key_and_market() -> None:
    ledger = CostLedger()
    ledger.add("spot", 4.0, {A: 1.0, B: 1.0})
    ledger.add("on-demand", 1.0, {A: 1.0})
    assert ledger.by_market() == pytest.approx({"on-demand": 1.0, "spot": 4.0})
    assert ledger.totals[A, "spot"] == pytest.approx(2.0)


def test_the_meter_exports_attributed_cost_per_model_tier_tenant_endpoint_and_market() -> None:
    registry = CollectorRegistry()
    meter = CostMeter(registry)
    meter.record("spot", attribute(3.0, {A: 1.0, B: 2.0}))
    text = generate_latest(registry).decode()
    assert ('peakgate_cost_total{endpoint="/v2/document",market="spot",model="student-en-es-int8",'
            'tenant="globex",tier="large"} 2.0') in text
