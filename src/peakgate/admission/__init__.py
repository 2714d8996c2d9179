"""Admission: API keys, per-key and per-class rate limits, billing-period quotas."""

from peakgate.admission.admission import Admission
from peakgate.admission.bucket import LeakyBucket, RateLimiter, TokenBucket

__all__ = ["Admission", "LeakyBucket", "RateLimiter", "TokenBucket"]
