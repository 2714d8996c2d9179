"""Config → engine. A plain match on the engine kind: adding an engine means adding a case here."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from peakgate.backends.apertium import ApertiumBackend
from peakgate.backends.base import Backend
from peakgate.backends.ctranslate2_backend import CTranslate2Backend, DecodingGuards
from peakgate.backends.echo_backend import EchoBackend
from peakgate.backends.openai_backend import OpenAIBackend
from peakgate.config import ModelConfig
from peakgate.errors import ConfigError
from peakgate.resilience.outlier import OutlierDetector

# (model name, replica count) -> the detector that ejects that model's bad replicas
OutlierFactory = Callable[[str, int], OutlierDetector]


def resolve_model_path(config: ModelConfig, models_dir: Path) -> Path | None:
    """The model folder; relative paths live under `models_dir`."""
    if config.path is None:
        return None
    path = Path(config.path).expanduser()
    return path if path.is_absolute() else models_dir / path


def _required(config: ModelConfig, field: str) -> str:
    value = getattr(config, field)
    if not value:
        raise ConfigError(f"model {config.name!r} (engine {config.engine}) needs {field!r}")
    return str(value)


def build_backend(config: ModelConfig, models_dir: Path, outliers: OutlierFactory | None = None) -> Backend:
    """An unstarted backend for `config`; nothing is loaded until `start()`. Engines with independently failing
    replicas (Apertium's pipelines) get a detector from `outliers`."""
    pair = (config.source, config.target)
    match config.engine:
        case "apertium":
            return ApertiumBackend(
                config.name, _required(config, "mode"), *pair,
                pipelines=config.pipelines, timeout_s=config.timeout_s, max_batch_size=config.max_batch_size,
                outliers=outliers(config.name, config.pipelines) if outliers is not None else None,
            )
        case "ctranslate2":
            path = resolve_model_path(config, models_dir)
            if path is None:
                raise ConfigError(f"model {config.name!r} (engine ctranslate2) needs 'path'")
            return CTranslate2Backend(
                config.name, path, *pair,
                compute_type=config.compute_type, device=config.device, inter_threads=config.inter_threads,
                intra_threads=config.intra_threads, max_batch_size=config.max_batch_size,
                preferred_batch_sizes=config.preferred_batch_sizes, bulk_replicas=config.bulk_replicas,
                bulk_nice=config.bulk_nice,
                guards=DecodingGuards(config.max_decoding_length_ratio, config.no_repeat_ngram_size,
                                      config.repetition_penalty, config.length_group_size),
            )
        case "openai":
            return OpenAIBackend(
                config.name, _required(config, "base_url"), config.api_key, _required(config, "upstream_model"),
                [pair], timeout_s=config.timeout_s, max_batch_size=config.max_batch_size,
            )
        case "echo":
            return EchoBackend(config.name, [pair], max_batch_size=config.max_batch_size, delay_ms=config.delay_ms)
        case unknown:
            raise ConfigError(f"model {config.name!r} has unknown engine {unknown!r}")
