"""AES-256-GCM sealing of single stored values.

A sealed value is a version byte, a random 96-bit nonce, then the ciphertext with its tag. The caller's
`context` (a job or glossary id) is authenticated as associated data, so a value copied into another row does
not open there. Random nonces keep one key good for far more values than a server stores (NIST's 2^32 bound).
"""

from __future__ import annotations

import base64
import binascii
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from peakgate.errors import PeakgateError

KEY_BYTES = 32
_VERSION = b"\x01"
_NONCE_BYTES = 12
_HEADER = len(_VERSION) + _NONCE_BYTES


class StoreKeyError(PeakgateError):
    """A store key is malformed, or a stored value does not open with the configured key."""

    code = "store_key_error"


def decode_key(text: str) -> bytes:
    """A key as configured: URL-safe base64 of 32 bytes (`Sealer.new_key_text()` makes one)."""
    try:
        key = base64.urlsafe_b64decode(text.strip().encode("ascii"))
    except (binascii.Error, UnicodeEncodeError, ValueError) as exc:
        raise StoreKeyError("the store key is not URL-safe base64") from exc
    if len(key) != KEY_BYTES:
        raise StoreKeyError(f"the store key must decode to {KEY_BYTES} bytes, not {len(key)}")
    return key


class Sealer:
    def __init__(self, key: bytes) -> None:
        if len(key) != KEY_BYTES:
            raise StoreKeyError(f"the store key must be {KEY_BYTES} bytes, not {len(key)}")
        self._aead = AESGCM(key)

    @classmethod
    def ephemeral(cls) -> Sealer:
        """A key that lives as long as this object: for in-memory stores and tests, never for files kept."""
        return cls(os.urandom(KEY_BYTES))

    @staticmethod
    def new_key_text() -> str:
        return base64.urlsafe_b64encode(os.urandom(KEY_BYTES)).decode("ascii")

    def seal(self, plain: bytes, context: bytes) -> bytes:
        nonce = os.urandom(_NONCE_BYTES)
        return _VERSION + nonce + self._aead.encrypt(nonce, plain, context)

    def open(self, sealed: bytes, context: bytes) -> bytes:
        if sealed[:1] != _VERSION:
            raise StoreKeyError("a stored value is not sealed (written by an older release, or damaged)")
        try:
            return self._aead.decrypt(sealed[1:_HEADER], sealed[_HEADER:], context)
        except InvalidTag as exc:
            raise StoreKeyError("a stored value does not open with the store key (wrong key, or damaged)") from exc

    def seal_text(self, text: str, context: bytes) -> bytes:
        return self.seal(text.encode("utf-8"), context)

    def open_text(self, sealed: bytes, context: bytes) -> str:
        return self.open(sealed, context).decode("utf-8")
