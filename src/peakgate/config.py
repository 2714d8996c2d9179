"""Configuration: pydantic, built once at start-up and passed down. The only module that reads the environment."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from peakgate.admission.settings import AdmissionConfig
from peakgate.api.edge_settings import EdgeCachePolicy
from peakgate.atrest.settings import AtRestConfig
from peakgate.backends.apertium_modes import ModePair, discover_modes
from peakgate.cache.settings import CacheConfig
from peakgate.cluster.config import ClusterConfig
from peakgate.control.loop_settings import AutoscaleConfig
from peakgate.errors import ConfigError
from peakgate.glossary.store import GlossaryStoreKind
from peakgate.jobs.config import JobsConfig
from peakgate.media.settings import MediaConfig
from peakgate.memory.settings import TmConfig
from peakgate.observe.slo_settings import SloConfig
from peakgate.quality.settings import QualityConfig
from peakgate.redaction.policy import RedactionPolicy
from peakgate.redaction.settings import RedactionConfig
from peakgate.resilience.settings import ResilienceConfig
from peakgate.scaleout.settings import QueueConfig

PriorityClass = Literal["interactive", "document", "batch"]
PRIORITY_ORDER: tuple[PriorityClass, ...] = ("interactive", "document", "batch")
EngineKind = Literal["apertium", "ctranslate2", "openai", "echo"]
REPO_MODELS_DIR = Path(__file__).resolve().parents[2] / "models"
DEFAULT_DATA_DIR = Path("var")  # relative to the working directory the server starts in


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ModelConfig(_Frozen):
    """One named model: an engine serving one language pair."""

    name: str
    engine: EngineKind
    source: str
    target: str
    precision: str = "-"
    path: str | None = None  # ctranslate2 model folder (relative paths resolve against models_dir)
    mode: str | None = None  # apertium mode, e.g. "eng-spa"
    pipelines: int = 1
    compute_type: str = "int8"
    device: Literal["cpu", "cuda", "auto"] = "cpu"
    inter_threads: int = 1
    intra_threads: int = 2
    # ctranslate2: replicas beside the inter_threads ones that decode only lower-class batches, at nice
    # `bulk_nice` (Linux): the OS then runs interactive decoding and the gateway first and the bulk replicas
    # take the CPU left over, which a running batch could not otherwise give up. 0: one shared pool.
    bulk_replicas: int = Field(default=0, ge=0)
    bulk_nice: int = Field(default=19, ge=0, le=19)
    max_batch_size: int = 32
    preferred_batch_sizes: tuple[int, ...] = (8, 16, 32)
    # ctranslate2 decoding guards, measured on the dev set (docs/quality.md): outputs capped at this many times
    # their source's tokens (+10), repeated 3-grams blocked, and repeated tokens penalised (together: no loop
    # left in the dev and held-out catalogs, +0.2-0.35 chrF). None / 0 / 1.0 turn each off.
    max_decoding_length_ratio: float | None = Field(default=2.0, gt=0)
    no_repeat_ngram_size: int = Field(default=3, ge=0)
    repetition_penalty: float = Field(default=1.1, gt=0)
    # ctranslate2: a batch is sorted by source length and decoded in groups of this many, each capped by its own
    # longest source, so one long sentence pads and holds only its group (0: one group). 16 measured fastest on
    # the dev set in batches of 32 (8 was slower than one group: too little width per decoding step).
    length_group_size: int = Field(default=16, ge=0)
    base_url: str | None = None  # openai-compatible upstream
    api_key: str | None = None
    upstream_model: str | None = None
    timeout_s: float = 10.0
    delay_ms: float = Field(default=0.0, ge=0)  # echo: simulated engine time per batch (benchmarks, tests)


class BatcherConfig(_Frozen):
    """Triton-style dynamic batching knobs, per model queue."""

    max_batch_size: int = 32
    preferred_batch_sizes: tuple[int, ...] = (8, 16, 32)
    max_queue_delay_ms: float = 5.0
    max_batch_tokens: int = 4096
    max_queue_len: int = 2048
    lower_class_queue_share: float = Field(default=0.75, gt=0, le=1)  # document/batch may fill this much
    # Workers (of a model with several) kept for interactive batches while interactive traffic was seen in the
    # last `reserve_window_s`: a running batch cannot be preempted, so a lower-class flood would otherwise
    # make every interactive request wait for a full batch first. Never all workers; idle outside the window.
    reserved_workers: int = 1
    reserve_window_s: float = 2.0
    # While interactive traffic is recent, lower-class batches hold at most this many sentences, so the
    # unreserved workers come back for interactive work every few tens of milliseconds.
    lower_batch_size_while_urgent: int = Field(default=8, ge=1)
    # An interactive batch may be topped up to this many sentences with queued lower-class ones no longer than
    # its longest: they ride along for a little extra decode width, no extra steps. Off (0) by default:
    # bench.overload with 8 measured +15 % mixed capacity and +13 % goodput but interactive p99 ~1.6x higher.
    urgent_fill_batch_size: int = Field(default=0, ge=0)
    # Batches handed to an engine beyond the ones it runs side by side. They wait in the engine's own queue,
    # so a replica that finishes starts the next batch at once instead of idling while the event loop fans
    # out the results and plans again (bench.throughput: served/direct 0.5 -> 0.8 with one).
    lookahead_batches: int = Field(default=1, ge=0)


class ClassConfig(_Frozen):
    """SLA and decoding per priority class."""

    deadline_ms: float = 10_000.0
    max_queue_wait_ms: float = 5_000.0
    beam_size: int = 1
    max_decoding_length: int = 256
    rate_chars_per_s: float = 200_000.0  # token bucket shared by the whole class
    burst_chars: float = 400_000.0
    smoothing: bool = False  # leaky-bucket shaping instead of bursts
    # With smoothing: a request waits up to this long for its turn at the class's outlet before it is refused
    # (429 + Retry-After), so requests that merely arrive close together are spaced out, not turned away.
    max_smoothing_delay_s: float = Field(default=2.0, ge=0)


def _default_classes() -> dict[PriorityClass, ClassConfig]:
    return {
        "interactive": ClassConfig(deadline_ms=3_000, max_queue_wait_ms=500),
        "document": ClassConfig(deadline_ms=30_000, max_queue_wait_ms=10_000, beam_size=2),
        "batch": ClassConfig(deadline_ms=300_000, max_queue_wait_ms=120_000, smoothing=True),
    }


class KeyConfig(_Frozen):
    """An API key: who it belongs to, its priority class and quotas."""

    key: str
    tenant: str
    priority_class: PriorityClass = "interactive"
    rate_chars_per_s: float = 20_000.0
    burst_chars: float = 50_000.0
    quota_chars: int | None = None  # billing-period character limit (DeepL 456 when spent)
    pinned: bool = False  # keeps its tier when the service degrades to the light model (ladder L3)


class AuthConfig(_Frozen):
    """Open dev mode (no `keys`): every response says so in `X-Peakgate-Auth`; with this flag a key shaped like
    a real DeepL key (a UUID, optionally ":fx") is refused with 403, so SDK users see the auth error they expect."""

    refuse_deepl_like_keys_in_open_mode: bool = False


class LimitsConfig(_Frozen):
    max_segment_chars: int = 5_000
    max_request_chars: int = 128_000
    max_segments: int = 50


class GlossaryConfig(_Frozen):
    store: GlossaryStoreKind = "sqlite"
    path: Path | None = None  # None: `<data_dir>/glossaries.sqlite3`; relative paths live under data_dir


class ApertiumConfig(_Frozen):
    """The installed Apertium pairs, discovered from their modes and served beside the configured models."""

    # None: discover when the config lists no models (the embedded default), so a deployment that lists its
    # models gets exactly those unless it asks for more; true / false: always / never.
    discover: bool | None = None
    allow: tuple[str, ...] = ()  # modes ("eng-cat") or pairs ("en-ca") to serve; empty: every installed one
    pipelines: int = Field(default=1, ge=1)  # per discovered pair; the shipped en<->es models set their own


class PivotConfig(_Frozen):
    """Two-hop translation (source -> pivot -> target) for pairs no model serves directly."""

    enabled: bool = True
    # Tried in order. Spanish first: most Debian pairs go through it; English reaches the Galician pairs.
    languages: tuple[str, ...] = ("es", "en")


class DetectionConfig(_Frozen):
    """Source-language detection (lingua) for requests without a source."""

    # "high": lingua's full n-gram models (~300 MB, ~0.3 ms a call; far better on short UI strings, see
    # docs/languages.md); "low": trigrams only (~40 MB, ~0.07 ms).
    accuracy: Literal["high", "low"] = "high"
    # Languages recognised only to refuse them by name: without them German would be scored as the nearest
    # served language and translated as that. Latin-script ones cost accuracy on the served ones; the others
    # load their models only when text in their script arrives.
    also_recognise: tuple[str, ...] = ("de", "nl", "pl", "ro", "sv", "ru", "uk", "el", "ar", "he", "hi", "zh",
                                       "ja", "ko")
    # An unserved language scored below this loses to the best served one (short strings are ambiguous);
    # at or above it the request is refused, naming the language.
    min_confidence: float = Field(default=0.5, ge=0.0, le=1.0)


def _privacy_first() -> RedactionPolicy:
    # De-identification is on unless a deployment turns it off: raw PII must never reach caches, TM or logs.
    return RedactionPolicy(default=RedactionConfig(enabled=True))


class Settings(_Frozen):
    host: str = "127.0.0.1"
    port: int = 8080
    # Where SQLite stores (TM, glossaries, jobs) live. None keeps them in memory: programmatic and test
    # settings are ephemeral; `load_settings` (the CLI) defaults to ./var.
    data_dir: Path | None = None
    models_dir: Path = REPO_MODELS_DIR
    models: tuple[ModelConfig, ...] = ()
    tiers: dict[str, tuple[str, ...]] = Field(default_factory=dict)  # tier -> model fallback chain
    default_tier: str = "medium"
    batcher: BatcherConfig = BatcherConfig()
    classes: dict[PriorityClass, ClassConfig] = Field(default_factory=_default_classes)
    keys: tuple[KeyConfig, ...] = ()
    auth: AuthConfig = AuthConfig()
    admission: AdmissionConfig = AdmissionConfig()  # buckets and quotas in-process or shared in Redis
    limits: LimitsConfig = LimitsConfig()
    cache: CacheConfig = CacheConfig()
    tm: TmConfig = TmConfig()
    glossary: GlossaryConfig = GlossaryConfig()
    redaction: RedactionPolicy = Field(default_factory=_privacy_first)
    jobs: JobsConfig = JobsConfig()
    at_rest: AtRestConfig = AtRestConfig()  # the key sealing stored job and glossary text
    resilience: ResilienceConfig = ResilienceConfig()
    slo: SloConfig = SloConfig()  # availability and latency objectives per class (observe/slo_settings.py)
    queue: QueueConfig = QueueConfig()  # in-process (embedded default) or Redis Streams with worker processes
    cluster: ClusterConfig | None = None  # gateway clusters behind `peakgate route` (cluster/config.py)
    autoscale: AutoscaleConfig = AutoscaleConfig()  # `peakgate autoscale` (control/loop_settings.py)
    apertium: ApertiumConfig = ApertiumConfig()
    pivot: PivotConfig = PivotConfig()
    detection: DetectionConfig = DetectionConfig()
    quality: QualityConfig = QualityConfig()  # quality estimation and fallback (quality/settings.py)
    edge_cache: EdgeCachePolicy = EdgeCachePolicy()  # GET /v1/translate's cache headers (api/edge_settings.py)
    media: MediaConfig = MediaConfig()  # images and speech: file caps, the media pool (media/settings.py)
    # On SIGTERM: open requests, then the running jobs' chunks, get this long before the process exits anyway
    # (interrupted jobs resume at the next start).
    shutdown_grace_s: float = Field(default=10.0, gt=0)
    log_level: str = "info"
    # One log line per request costs more CPU than a cache hit; /metrics has the counts and latencies.
    access_log: bool = False

    @field_validator("classes", mode="before")
    @classmethod
    def _fill_classes(cls, value: object) -> object:
        # Configuring one class, or one field of it, keeps the defaults of everything else.
        if not isinstance(value, dict):
            return value
        merged: dict[str, object] = {}
        for name, default in _default_classes().items():
            given = value.get(name, {})
            given = given.model_dump(exclude_unset=True) if isinstance(given, ClassConfig) else given
            merged[name] = default.model_dump() | given if isinstance(given, dict) else given
        return merged | {k: v for k, v in value.items() if k not in merged}

    @model_validator(mode="after")
    def _check_tiers(self) -> Settings:
        names = {m.name for m in self.models}
        for tier, chain in self.tiers.items():
            missing = [n for n in chain if n not in names]
            if missing:
                raise ValueError(f"tier {tier!r} names unknown models {missing}")
        if self.tiers and self.default_tier not in self.tiers:
            raise ValueError(f"default_tier {self.default_tier!r} is not a tier")
        return self

    @model_validator(mode="after")
    def _check_off_peak(self) -> Settings:
        # The forecast is published by `peakgate autoscale`, which runs only beside the shared Redis queue.
        if self.jobs.off_peak_source == "forecast" and self.queue.backend != "redis":
            raise ValueError('jobs.off_peak_source = "forecast" reads what `peakgate autoscale` publishes in the '
                             'queue\'s Redis: set [queue] backend = "redis" (and its redis_url)')
        return self

    def model(self, name: str) -> ModelConfig | None:
        return next((m for m in self.models if m.name == name), None)

    def store_path(self, configured: Path | None, default_name: str) -> Path | None:
        """A store's file under `data_dir` (absolute paths as given); None: keep the store in memory."""
        if configured is not None and configured.expanduser().is_absolute():
            return configured.expanduser()
        if self.data_dir is None:
            return None
        return self.data_dir / (configured or default_name)


def default_models() -> tuple[ModelConfig, ...]:
    """The embedded default: Apertium both ways plus the shipped en->es students."""
    # Two single-threaded CTranslate2 replicas, not one two-threaded: the small student barely scales with
    # intra-op threads (one 2-thread stream keeps ~1.1 cores busy), two batches side by side use both cores.
    # A third, niced replica runs lower-class batches on what interactive work leaves (bench.overload: mixed
    # capacity and goodput at 10x both ~15-20 % higher than without it, interactive p99 unchanged).
    return (
        ModelConfig(name="apertium-en-es", engine="apertium", source="en", target="es", mode="eng-spa", pipelines=2),
        ModelConfig(name="apertium-es-en", engine="apertium", source="es", target="en", mode="spa-eng"),
        ModelConfig(name="student-en-es-int8", engine="ctranslate2", source="en", target="es",
                    precision="int8", path="student-en-es-int8", compute_type="int8", inter_threads=2, intra_threads=1,
                    bulk_replicas=1),
        ModelConfig(name="student-en-es-fp32", engine="ctranslate2", source="en", target="es",
                    precision="float32", path="student-en-es-fp32", compute_type="float32", inter_threads=2,
                    intra_threads=1, bulk_replicas=1),
        ModelConfig(name="student-en-es-large-int8", engine="ctranslate2", source="en", target="es",
                    precision="int8", path="student-en-es-large-int8", compute_type="int8", inter_threads=2,
                    intra_threads=1, bulk_replicas=1),
        ModelConfig(name="student-en-es-large-fp32", engine="ctranslate2", source="en", target="es",
                    precision="float32", path="student-en-es-large-fp32", compute_type="float32", inter_threads=2,
                    intra_threads=1, bulk_replicas=1),
    )


def default_tiers() -> dict[str, tuple[str, ...]]:
    # Filled in with measured figures in the README: see "Default tier map".
    return {
        "tiny": ("apertium-en-es", "student-en-es-int8", "apertium-es-en"),
        "medium": ("student-en-es-int8", "apertium-en-es", "apertium-es-en"),
        "large": ("student-en-es-large-int8", "student-en-es-int8", "apertium-en-es", "apertium-es-en"),
    }


def _allowed(allow: tuple[str, ...], pair: ModePair) -> bool:
    return not allow or pair.mode in allow or f"{pair.source}-{pair.target}" in allow


def _place(chain: tuple[str, ...], new: ModelConfig, models: dict[str, ModelConfig]) -> tuple[str, ...]:
    """`chain` with `new` appended, or, for a regional target ("en-us"), put before the first model of its pair
    for the base language: the router takes the first live model serving a request, and a model for "en"
    serves "en-us" too."""
    base = new.target.partition("-")[0]
    if base != new.target:
        for i, name in enumerate(chain):
            other = models[name]
            if (other.source, other.target) == (new.source, base):
                return (*chain[:i], new.name, *chain[i:])
    return (*chain, new.name)


def with_installed(settings: Settings, installed: tuple[ModePair, ...]) -> Settings:
    """`settings` plus a model, in every tier, for each installed Apertium pair no configured model runs."""
    taken = {m.mode for m in settings.models if m.engine == "apertium"}
    names = {m.name for m in settings.models}
    added = tuple(
        ModelConfig(name=f"apertium-{p.source}-{p.target}", engine="apertium", source=p.source, target=p.target,
                    mode=p.mode, pipelines=settings.apertium.pipelines)
        for p in installed
        if p.mode not in taken and f"apertium-{p.source}-{p.target}" not in names
        and _allowed(settings.apertium.allow, p)
    )
    models = {m.name: m for m in (*settings.models, *added)}
    tiers = dict(settings.tiers)
    for model in added:
        tiers = {tier: _place(chain, model, models) for tier, chain in tiers.items()}
    return settings.model_copy(update={"models": (*settings.models, *added), "tiers": tiers})


def _read_file(path: Path) -> dict[str, object]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc}") from exc
    try:
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"config {path} is not valid {path.suffix.lstrip('.') or 'json'}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"config {path} must hold a table/object at the top")
    return data


def load_settings(path: Path | None = None, **overrides: object) -> Settings:
    """File (TOML or JSON) < environment (PEAKGATE_CONFIG, PEAKGATE_DATA_DIR, PEAKGATE_STORE_KEY) < explicit
    overrides."""
    env_path = os.environ.get("PEAKGATE_CONFIG")
    path = path or (Path(env_path) if env_path else None)
    file_data = _read_file(path) if path else {}
    data = dict(file_data)
    data.setdefault("data_dir", DEFAULT_DATA_DIR)
    if "PEAKGATE_DATA_DIR" in os.environ:
        data["data_dir"] = os.environ["PEAKGATE_DATA_DIR"]
    if "PEAKGATE_STORE_KEY" in os.environ:
        at_rest = data.get("at_rest")
        data["at_rest"] = {**(at_rest if isinstance(at_rest, dict) else {}), "key": os.environ["PEAKGATE_STORE_KEY"]}
    embedded = "models" not in file_data and overrides.get("models") is None
    if embedded:  # the embedded default brings its tier map along
        data["models"] = default_models()
        data.setdefault("tiers", default_tiers())
    data.update({k: v for k, v in overrides.items() if v is not None})
    try:
        settings = Settings.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"invalid config: {exc}") from exc
    discover = settings.apertium.discover
    if discover or (discover is None and embedded):
        settings = with_installed(settings, discover_modes())
    return settings
