"""Where the store key comes from: the config, a key file, or one generated on first start."""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

from peakgate.atrest.sealer import Sealer, decode_key
from peakgate.atrest.settings import DEFAULT_KEY_FILE, AtRestConfig
from peakgate.errors import ConfigError

_log = logging.getLogger(__name__)


def open_sealer(config: AtRestConfig, data_dir: Path | None) -> Sealer:
    """`key`, else `key_file`, else `<data_dir>/store.key` (made if missing); no data_dir: nothing is on disk,
    so a key for this process only."""
    if config.key is not None:
        return Sealer(decode_key(config.key.get_secret_value()))
    if config.key_file is not None:
        path = config.key_file.expanduser()
        return Sealer(_read(path if path.is_absolute() or data_dir is None else data_dir / path))
    if data_dir is None:
        return Sealer.ephemeral()
    return Sealer(_read_or_create(data_dir / DEFAULT_KEY_FILE))


def _read(path: Path) -> bytes:
    try:
        return decode_key(path.read_text(encoding="ascii"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the store key file {path}: {exc}") from exc


def _read_or_create(path: Path) -> bytes:
    if path.exists():
        return _read(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    draft = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        # Written whole under a private name, then linked into place: a process starting beside us either wins
        # the link or reads the finished file, never a half-written one.
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(Sealer.new_key_text() + "\n")
        with contextlib.suppress(FileExistsError):
            os.link(draft, path)
            _log.warning("created the store key %s (mode 0600): back it up with the data; stored jobs and "
                         "glossaries cannot be read without it", path)
    except OSError as exc:
        raise ConfigError(f"cannot create the store key file {path}: {exc}") from exc
    finally:
        draft.unlink(missing_ok=True)
    return _read(path)
