"""Tier router: from a request to one model plus the fallback chain behind it. Pure logic over two callbacks."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from peakgate.backends.base import Health
from peakgate.config import ModelConfig, PriorityClass, Settings
from peakgate.domain import Principal, TranslateRequest
from peakgate.errors import BadRequest, Unavailable, UnknownModel, UnsupportedPair
from peakgate.observe.metrics import Metrics

QUALITY_HINTS: Mapping[str, str] = MappingProxyType({"fast": "tiny", "balanced": "medium", "quality": "large"})
CHEAP_TIER = "tiny"
LONG_BATCH_CHARS = 2_000
EXPLICIT_TIER = "explicit"  # Route.tier for an explicit model listed in no tier


@dataclass(frozen=True, slots=True)
class Route:
    tier: str
    model: str  # the model to use now
    chain: tuple[str, ...]  # `model` first, then the other live models serving the pair, in tier order


def _lang_matches(model_lang: str, requested: str) -> bool:
    # A model for "en" serves "en-US" too; a model for "pt-br" serves only "pt-br".
    wanted = requested.lower().replace("_", "-")
    return model_lang.lower() in (wanted, wanted.split("-", 1)[0])


def serves(model: ModelConfig, source: str, target: str) -> bool:
    return _lang_matches(model.source, source) and _lang_matches(model.target, target)


class TierRouter:
    """Picks a model for a request.

    Rules, in order:
    1. An explicit `request.model` wins: it must exist (else `UnknownModel`) and serve the pair (else
       `UnsupportedPair`); it is never substituted (`Unavailable` when it is DOWN). Its tier is the first
       tier listing it, else "explicit".
    2. Else the tier is `request.tier` -- a tier name, or a quality hint (fast -> tiny, balanced -> medium,
       quality -> large; a hint whose tier is not configured falls back to the default tier). Any other
       name is a `BadRequest`.
    3. Else `settings.default_tier`; but a batch-class request (the request's priority, else the key's)
       longer than 2,000 characters in total goes to the cheap tier "tiny" when that exists, since bulk
       work values throughput over quality. An explicit tier or hint is always honoured.
    With no tiers configured, every model forms one implicit chain named after the default tier.

    Within the tier's chain only models serving (source, target) count. DOWN models are skipped and
    counted in `metrics.fallbacks`. A model whose load (oldest queue wait, seconds) exceeds the class's
    `max_queue_wait_ms` is skipped when a later model in the chain is OK and less loaded (not counted as
    a fallback: nothing is broken). No model serving the pair -> `UnsupportedPair`; all DOWN ->
    `Unavailable` with `retry_after_s`.
    """

    def __init__(
        self,
        settings: Settings,
        health: Callable[[str], Health],
        load: Callable[[str], float],
        metrics: Metrics | None = None,
        *,
        down_retry_after_s: float = 5.0,
    ) -> None:
        self._settings = settings
        self._models = {m.name: m for m in settings.models}
        self._health = health
        self._load = load
        self._metrics = metrics
        self._down_retry_after_s = down_retry_after_s
        self._tiers = dict(settings.tiers) or {settings.default_tier: tuple(m.name for m in settings.models)}

    def route(self, request: TranslateRequest, principal: Principal, source: str) -> Route:
        if request.model is not None:
            return self._explicit(request.model, source, request.target)
        priority = request.priority or principal.priority
        tier = self._pick_tier(request, priority)
        serving = [name for name in self._tiers[tier] if self._serves(name, source, request.target)]
        if not serving:
            raise UnsupportedPair(self._pair_message(f"no model in tier {tier!r} serves", source, request.target))
        alive = [name for name in serving if self._alive(tier, name)]
        if not alive:
            raise self._all_down(serving)
        model = self._least_overloaded(alive, priority)
        return Route(tier=tier, model=model, chain=(model, *(n for n in alive if n != model)))

    def _explicit(self, name: str, source: str, target: str) -> Route:
        if self._settings.model(name) is None:
            known = ", ".join(m.name for m in self._settings.models) or "none"
            raise UnknownModel(f"unknown model {name!r}; known models: {known}")
        if not self._serves(name, source, target):
            raise UnsupportedPair(self._pair_message(f"model {name!r} does not serve", source, target))
        if self._health(name) is Health.DOWN:
            raise self._all_down([name])
        tier = next((t for t, chain in self._tiers.items() if name in chain), EXPLICIT_TIER)
        return Route(tier=tier, model=name, chain=(name,))

    def _pick_tier(self, request: TranslateRequest, priority: PriorityClass) -> str:
        wanted = request.tier
        if wanted is None:
            chars = sum(len(s) for s in request.segments)
            if priority == "batch" and chars > LONG_BATCH_CHARS and CHEAP_TIER in self._tiers:
                return CHEAP_TIER
            return self._settings.default_tier
        if wanted in self._tiers:
            return wanted
        if wanted in QUALITY_HINTS:
            hinted = QUALITY_HINTS[wanted]
            return hinted if hinted in self._tiers else self._settings.default_tier
        options = ", ".join([*self._tiers, *QUALITY_HINTS])
        raise BadRequest(f"unknown tier {wanted!r}; use one of: {options}")

    def _serves(self, name: str, source: str, target: str) -> bool:
        model = self._models.get(name)
        return model is not None and serves(model, source, target)

    def _alive(self, tier: str, name: str) -> bool:
        if self._health(name) is not Health.DOWN:
            return True
        if self._metrics is not None:
            self._metrics.fallbacks.labels(tier=tier, model=name).inc()
        return False

    def _least_overloaded(self, alive: list[str], priority: PriorityClass) -> str:
        if len(alive) == 1:
            return alive[0]
        limit_s = self._settings.classes[priority].max_queue_wait_ms / 1000.0
        loads = {name: self._load(name) for name in alive}
        for i, name in enumerate(alive):
            better_later = any(
                self._health(n) is Health.OK and loads[n] < loads[name] for n in alive[i + 1 :]
            )
            if loads[name] <= limit_s or not better_later:
                return name
        return alive[-1]  # unreachable: the last model never has a later one

    def _all_down(self, names: list[str]) -> Unavailable:
        return Unavailable(
            f"every model serving this request is down: {', '.join(names)}",
            retry_after_s=self._down_retry_after_s,
        )

    def _pair_message(self, what: str, source: str, target: str) -> str:
        pairs = sorted({f"{m.source}->{m.target}" for m in self._settings.models})
        return f"{what} {source}->{target}; available pairs: {', '.join(pairs) or 'none'}"
