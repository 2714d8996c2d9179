"""Routing: tier router with fallback chains, and language detection."""

from peakgate.routing.langdetect import detect
from peakgate.routing.router import Route, TierRouter

__all__ = ["Route", "TierRouter", "detect"]
