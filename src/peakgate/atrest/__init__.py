"""Data at rest: stored job and glossary text is sealed (AES-256-GCM) under a configured or generated key."""

from peakgate.atrest.keys import open_sealer
from peakgate.atrest.sealer import Sealer, StoreKeyError
from peakgate.atrest.settings import AtRestConfig

__all__ = ["AtRestConfig", "Sealer", "StoreKeyError", "open_sealer"]
