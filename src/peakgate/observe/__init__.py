"""Observability: Prometheus metrics (one registry per service, no module globals)."""
