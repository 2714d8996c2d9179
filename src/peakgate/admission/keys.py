"""API keys: who is calling, from `Settings.keys`."""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterable

from peakgate.config import PRIORITY_ORDER, KeyConfig, PriorityClass
from peakgate.domain import Principal
from peakgate.errors import ConfigError, Unauthorized

ANONYMOUS = Principal(key=None, tenant="anonymous", priority="interactive")
# DeepL's keys: a UUID, with ":fx" on the free plan.
_DEEPL_KEY = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(:fx)?", re.IGNORECASE)


def looks_like_deepl_key(key: str | None) -> bool:
    """A key a client meant for DeepL's own servers, which open dev mode can refuse (`AuthConfig`)."""
    return key is not None and _DEEPL_KEY.fullmatch(key.strip()) is not None


def _digest(key: str) -> bytes:
    # Look keys up by hash, so lookup timing says nothing about how much of a guessed key was right.
    return hashlib.sha256(key.encode("utf-8")).digest()


def key_id(key: str) -> str:
    """A stable name for an API key in shared stores, which must never hold the key itself."""
    return _digest(key).hex()[:32]


class KeyRing:
    """Resolves API keys to principals.

    With no keys configured the service runs in open dev mode: every caller, with or without a key,
    is the anonymous interactive principal, and construction logs one loud warning saying so.
    """

    def __init__(self, keys: Iterable[KeyConfig]) -> None:
        self._keys: dict[bytes, KeyConfig] = {}
        for config in keys:
            digest = _digest(config.key)
            if digest in self._keys:
                raise ConfigError(f"API key of tenant {config.tenant!r} is configured twice")
            self._keys[digest] = config
        if self.open_mode:
            logging.getLogger(__name__).warning(
                "NO API KEYS CONFIGURED: open dev mode, every request is served as the anonymous tenant "
                "without authentication; configure [[keys]] before exposing this service"
            )

    @property
    def open_mode(self) -> bool:
        return not self._keys

    def config(self, key: str | None) -> KeyConfig | None:
        """The configuration of a known key, else None."""
        return self._keys.get(_digest(key)) if key else None

    def authenticate(self, key: str | None) -> Principal:
        if self.open_mode:
            return ANONYMOUS
        if not key:
            raise Unauthorized("missing API key: send it in the Authorization header")
        config = self.config(key)
        if config is None:
            raise Unauthorized("unknown API key")
        return Principal(key=config.key, tenant=config.tenant, priority=config.priority_class, pinned=config.pinned)


def effective_priority(requested: PriorityClass | None, granted: PriorityClass) -> PriorityClass:
    """A request may ask for a lower class than its key's, never a higher one."""
    if requested is None:
        return granted
    return PRIORITY_ORDER[max(PRIORITY_ORDER.index(requested), PRIORITY_ORDER.index(granted))]
