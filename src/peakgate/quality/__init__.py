"""Translation quality estimation and the second-engine fallback (docs/quality.md)."""
