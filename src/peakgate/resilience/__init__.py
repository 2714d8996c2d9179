"""Resilience: circuit breakers, outlier ejection, retry budgets, adaptive concurrency, shedding, degradation.

Policies here are pure functions over frozen contexts; the mechanism classes hold state on an injected Clock.
"""
