"""Routing: tier router with fallback chains, language coverage with pivoting, and language detection."""

from peakgate.routing.router import Route, TierRouter

__all__ = ["Route", "TierRouter"]
