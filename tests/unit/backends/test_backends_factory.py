"""build_backend: one ModelConfig in, the matching unstarted engine out."""

from __future__ import annotations

from pathlib import Path

import pytest

from peakgate.backends.apertium import ApertiumBackend
from peakgate.backends.base import Health
from peakgate.backends.ctranslate2_backend import CTranslate2Backend
from peakgate.backends.echo_backend import EchoBackend
from peakgate.backends.factory import build_backend, resolve_model_path
from peakgate.backends.openai_backend import OpenAIBackend
from peakgate.config import ModelConfig, default_models
from peakgate.errors import ConfigError

MODELS_DIR = Path("/srv/models")


def test_every_default_model_builds_unstarted() -> None:
    backends = [build_backend(m, MODELS_DIR) for m in default_models()]
    assert [type(b) for b in backends] == [ApertiumBackend] * 2 + [CTranslate2Backend] * 4
    assert [b.name for b in backends] == [m.name for m in default_models()]
    assert all(b.health() is Health.DOWN for b in backends)


def test_apertium_gets_mode_and_pipelines() -> None:
    config = ModelConfig(name="a", engine="apertium", source="en", target="es", mode="eng-spa", pipelines=3)
    backend = build_backend(config, MODELS_DIR)
    assert isinstance(backend, ApertiumBackend)
    assert backend.pairs == frozenset({("en", "es")})
    assert backend.cost_model().max_batch_size == config.max_batch_size


def test_ctranslate2_path_resolves_under_models_dir_unless_absolute() -> None:
    relative = ModelConfig(name="s", engine="ctranslate2", source="en", target="es", path="student")
    absolute = relative.model_copy(update={"path": "/opt/student"})
    assert resolve_model_path(relative, MODELS_DIR) == MODELS_DIR / "student"
    assert resolve_model_path(absolute, MODELS_DIR) == Path("/opt/student")
    backend = build_backend(relative.model_copy(update={"preferred_batch_sizes": (4, 12)}), MODELS_DIR)
    assert isinstance(backend, CTranslate2Backend)
    assert backend.cost_model().preferred_batch_sizes == (4, 12)


def test_openai_and_echo() -> None:
    llm = ModelConfig(name="llm", engine="openai", source="en", target="es",
                      base_url="http://llm:8000/v1", upstream_model="qwen", max_batch_size=8)
    echo = ModelConfig(name="e", engine="echo", source="en", target="es")
    openai_backend = build_backend(llm, MODELS_DIR)
    assert isinstance(openai_backend, OpenAIBackend)
    assert openai_backend.pairs == frozenset({("en", "es")})
    assert openai_backend.cost_model().max_batch_size == 8
    assert isinstance(build_backend(echo, MODELS_DIR), EchoBackend)


@pytest.mark.parametrize(
    ("engine", "missing"),
    [("apertium", "mode"), ("ctranslate2", "path"), ("openai", "base_url")],
)
def test_missing_required_field_is_a_config_error(engine: str, missing: str) -> None:
    config = ModelConfig.model_validate(
        {"name": "m", "engine": engine, "source": "en", "target": "es", "upstream_model": "x"}
    )
    with pytest.raises(ConfigError, match=missing):
        build_backend(config, MODELS_DIR)


def test_openai_needs_an_upstream_model() -> None:
    config = ModelConfig(name="m", engine="openai", source="en", target="es", base_url="http://llm/v1")
    with pytest.raises(ConfigError, match="upstream_model"):
        build_backend(config, MODELS_DIR)


def test_unknown_engine_is_a_config_error() -> None:
    # Validation forbids it, so only an unvalidated config can carry one.
    config = ModelConfig.model_construct(name="m", engine="marian", source="en", target="es")
    with pytest.raises(ConfigError, match="marian"):
        build_backend(config, MODELS_DIR)
