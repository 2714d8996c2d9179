"""The cost model: instance prices, the spot cap, the on-demand baseline and spot burst, per-key attribution.

Replicas up to the baseline run on on-demand instances; those above it (the burst) run on spot when spot is
allowed and its price is within the cap (default 70 % of on-demand, the seed's), else on on-demand too. An
interrupted spot instance is replaced by the provider (the simulator starts a new one on the notice). Each
period's cost is split over the work served in it, by (model, tier, tenant, endpoint): the seed's 按模型与路径计费.
Periods with no work are charged to the `IDLE` key. `CostMeter` exports the attributed cost to Prometheus.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from prometheus_client import CollectorRegistry, Counter
from pydantic import BaseModel, ConfigDict, Field

Market = Literal["on-demand", "spot"]
MARKETS: tuple[Market, ...] = ("on-demand", "spot")
HOUR_S = 3600.0


class InstanceType(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    on_demand_per_hour: float = Field(gt=0)  # in the price list's currency
    spot_per_hour: float = Field(gt=0)


class CostConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    # Example list prices (a 2-vCPU, 4 GiB instance in one AWS region, spot as seen on one day): configure yours.
    instance: InstanceType = InstanceType(name="c6i.large", on_demand_per_hour=0.085, spot_per_hour=0.034)
    spot: bool = True  # burst on spot (false: everything on on-demand)
    spot_price_cap: float = Field(default=0.70, gt=0, le=1)  # of the on-demand price
    baseline_replicas: int | None = Field(default=None, ge=0)  # on-demand floor; None: the clamps' min_replicas


def burst_market(config: CostConfig) -> Market:
    """Where replicas above the baseline run: spot when allowed and priced within the cap."""
    capped = config.instance.spot_per_hour <= config.spot_price_cap * config.instance.on_demand_per_hour
    return "spot" if config.spot and capped else "on-demand"


def price_per_s(config: CostConfig, market: Market) -> float:
    per_hour = config.instance.spot_per_hour if market == "spot" else config.instance.on_demand_per_hour
    return per_hour / HOUR_S


@dataclass(frozen=True, slots=True)
class CostKey:
    model: str
    tier: str
    tenant: str
    endpoint: str


IDLE = CostKey("-", "-", "-", "idle")


def attribute(cost: float, usage: Mapping[CostKey, float]) -> dict[CostKey, float]:
    """Split `cost` in proportion to the work each key was served (all to `IDLE` when none was)."""
    total = sum(usage.values())
    if total <= 0:
        return {IDLE: cost}
    return {key: cost * amount / total for key, amount in usage.items() if amount > 0}


class CostLedger:
    """Running totals of attributed cost by (key, market)."""

    def __init__(self) -> None:
        self.totals: dict[tuple[CostKey, Market], float] = defaultdict(float)

    def add(self, market: Market, cost: float, usage: Mapping[CostKey, float]) -> None:
        for key, amount in attribute(cost, usage).items():
            self.totals[key, market] += amount

    def by_market(self) -> dict[Market, float]:
        out: dict[Market, float] = dict.fromkeys(MARKETS, 0.0)
        for (_key, market), amount in self.totals.items():
            out[market] += amount
        return out


class CostMeter:
    """`peakgate_cost_total{model,tier,tenant,endpoint,market}`: attributed cost, on the caller's registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.cost = Counter("peakgate_cost_total", "Instance cost attributed by the work served, in the price "
                            "list's currency", ["model", "tier", "tenant", "endpoint", "market"], registry=registry)

    def record(self, market: Market, shares: Mapping[CostKey, float]) -> None:
        for key, amount in shares.items():
            self.cost.labels(key.model, key.tier, key.tenant, key.endpoint, market).inc(amount)
