"""Soak analysis: is RSS or the open-fd count growing, and would it matter over the horizon?

Pure: takes samples, returns a verdict. The first `warmup_fraction` of samples is dropped because caches, pools
and lazily loaded models fill up early, which is growth but not a leak. A least-squares line is fitted to the
rest; the slope projected over `horizon_h` (8 h by default: the seed's leak showed only after 8 hours) is
compared with a threshold. A short or noisy run is INCONCLUSIVE rather than a PASS nobody should trust.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Verdict = Literal["PASS", "FAIL", "INCONCLUSIVE"]
_MB = 1024 * 1024


class SoakThresholds(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    horizon_h: float = Field(default=8.0, gt=0)
    warmup_fraction: float = Field(default=0.2, ge=0, lt=1)
    min_samples: int = Field(default=12, ge=3)  # after warm-up; fewer points cannot separate trend from noise
    # After warm-up, the fitted samples must span this long: growth in a run's first minutes is mostly caches
    # and allocator arenas filling, and a straight line through seconds projected over hours says nothing.
    min_span_s: float = Field(default=0.0, ge=0)
    rss_growth_mb: float = Field(default=64.0, gt=0)  # allowed projected growth: this or rss_growth_pct of
    rss_growth_pct: float = Field(default=10.0, gt=0)  # the starting RSS, whichever is larger
    fds_growth: float = Field(default=50.0, gt=0)
    # PASS needs slope + z*SE under the limit and FAIL needs slope - z*SE over it (about 95 %); anything between
    # is noise that could go either way, so INCONCLUSIVE.
    z: float = Field(default=2.0, gt=0)


@dataclass(frozen=True, slots=True)
class Sample:
    t_s: float  # seconds from the run's start
    rss_bytes: float
    open_fds: float


@dataclass(frozen=True, slots=True)
class Fit:
    slope_per_h: float
    intercept: float
    r2: float
    projected: float  # growth over the horizon
    limit: float
    verdict: Verdict


def fit_line(ts: list[float], ys: list[float]) -> tuple[float, float, float, float]:
    """(slope per unit of t, intercept, R², slope's standard error) by least squares."""
    n = len(ts)
    mt, my = sum(ts) / n, sum(ys) / n
    stt = sum((t - mt) ** 2 for t in ts)
    slope = sum((t - mt) * (y - my) for t, y in zip(ts, ys, strict=True)) / stt if stt else 0.0
    intercept = my - slope * mt
    syy = sum((y - my) ** 2 for y in ys)
    sse = sum((y - intercept - slope * t) ** 2 for t, y in zip(ts, ys, strict=True))
    se = (sse / (n - 2) / stt) ** 0.5 if n > 2 and stt else float("inf")
    return slope, intercept, (1.0 - sse / syy) if syy else 1.0, se


def _judge(ts: list[float], ys: list[float], limit: float, th: SoakThresholds) -> Fit:
    slope_s, intercept, r2, se = fit_line(ts, ys)
    slope_h = slope_s * 3600.0
    projected = slope_h * th.horizon_h
    margin = th.z * se * 3600.0 * th.horizon_h
    verdict: Verdict
    if len(ts) < th.min_samples or ts[-1] - ts[0] < th.min_span_s:
        verdict = "INCONCLUSIVE"
    elif projected - margin >= limit:
        verdict = "FAIL"
    elif projected + margin < limit:
        verdict = "PASS"
    else:
        verdict = "INCONCLUSIVE"
    return Fit(slope_h, intercept, r2, projected, limit, verdict)


def analyse(samples: list[Sample], th: SoakThresholds | None = None) -> dict[str, object]:
    """Fits for RSS (MB) and open fds, and the overall verdict (the worse of the two)."""
    th = th or SoakThresholds()
    kept = sorted(samples, key=lambda s: s.t_s)[int(len(samples) * th.warmup_fraction):]
    if len(kept) < 2:
        return {"samples": len(samples), "kept": len(kept), "verdict": "INCONCLUSIVE",
                "reason": "fewer than 2 samples after warm-up"}
    ts = [s.t_s for s in kept]
    rss_mb = [s.rss_bytes / _MB for s in kept]
    rss = _judge(ts, rss_mb, max(th.rss_growth_mb, rss_mb[0] * th.rss_growth_pct / 100), th)
    fds = _judge(ts, [s.open_fds for s in kept], th.fds_growth, th)
    verdicts = {rss.verdict, fds.verdict}
    overall: Verdict = "FAIL" if "FAIL" in verdicts else "INCONCLUSIVE" if "INCONCLUSIVE" in verdicts else "PASS"
    return {"samples": len(samples), "kept": len(kept), "span_s": ts[-1] - ts[0], "min_span_s": th.min_span_s,
            "verdict": overall, "horizon_h": th.horizon_h,
            "rss_mb": _as_dict(rss), "open_fds": _as_dict(fds)}


def _as_dict(fit: Fit) -> dict[str, object]:
    return {"slope_per_h": fit.slope_per_h, "intercept": fit.intercept, "r2": fit.r2,
            "projected_growth": fit.projected, "limit": fit.limit, "verdict": fit.verdict}
