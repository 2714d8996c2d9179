"""Data-at-rest settings; `Settings.at_rest` holds them, `PEAKGATE_STORE_KEY` sets `key`."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, SecretStr, field_validator

from peakgate.atrest.sealer import StoreKeyError, decode_key

DEFAULT_KEY_FILE = "store.key"


class AtRestConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    # URL-safe base64 of 32 bytes. Wins over `key_file`; best given through PEAKGATE_STORE_KEY.
    key: SecretStr | None = None
    # A file holding the key (relative paths live under data_dir); it must exist. Neither set: the key is read
    # from `<data_dir>/store.key`, which is created (mode 0600) on first start.
    key_file: Path | None = None

    @field_validator("key")
    @classmethod
    def _well_formed(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            try:
                decode_key(value.get_secret_value())
            except StoreKeyError as exc:
                raise ValueError(exc.message) from exc  # pydantic reports ValueErrors as invalid config
        return value
