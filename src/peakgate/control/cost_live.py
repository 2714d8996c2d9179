"""Live cost: each autoscaler tick prices the fleet for the time since the previous tick and attributes it.

The fleet is what the provider last reported (serving, starting, draining and warm replicas: each one is an
instance paid for), the first `baseline` on on-demand and the rest on the burst market (`cost.burst_market`:
spot within the cap, else on-demand), for the tick's duration on the loop's clock (`Signals.at_s` less the
previous tick's). The cost is split over the engine characters the gateways counted in the same interval
(`Signals.engine_chars_by_key`, from `peakgate_engine_characters_total`) by (model, tier, tenant, endpoint), to
the `IDLE` key when no engine worked, and added to `peakgate_cost_total` on the autoscaler's registry. A tick
that fails before its signals leaves its time to the next one.
"""

from __future__ import annotations

from peakgate.control.contract import ProviderState, Tick
from peakgate.control.cost import MARKETS, CostConfig, CostMeter, Market, attribute, burst_market, price_per_s


def billed_instances(fleet: ProviderState) -> int:
    return fleet.serving + fleet.starting + fleet.draining + fleet.warm


def fleet_cost(config: CostConfig, baseline: int, instances: int, duration_s: float) -> dict[Market, float]:
    """The cost of `instances` over `duration_s` by market: up to `baseline` on on-demand, the rest on the burst
    market."""
    burst = burst_market(config)
    on_demand = min(instances, baseline)
    cost = dict.fromkeys(MARKETS, 0.0)
    cost["on-demand"] += on_demand * price_per_s(config, "on-demand") * duration_s
    cost[burst] += (instances - on_demand) * price_per_s(config, burst) * duration_s
    return cost


class LiveCost:
    """A `TickObserver`: charges each tick's fleet to `meter`, attributed by the work served in the tick."""

    stage = "cost"

    def __init__(self, config: CostConfig, baseline_replicas: int, meter: CostMeter) -> None:
        self._config = config
        self._baseline = baseline_replicas
        self._meter = meter
        self._last_at_s: float | None = None

    async def observe(self, tick: Tick) -> None:
        at_s = tick.signals.at_s
        since, self._last_at_s = self._last_at_s, at_s
        if since is None or tick.fleet is None or at_s <= since:
            return  # the first tick starts the count; an unknown fleet is not charged
        cost = fleet_cost(self._config, self._baseline, billed_instances(tick.fleet), at_s - since)
        for market, amount in cost.items():
            if amount > 0:
                self._meter.record(market, attribute(amount, tick.signals.engine_chars_by_key))
