"""An OpenAI-compatible chat-completions upstream (e.g. a vLLM server): the remote "large" tier.

Each segment is one chat request; a batch fans out concurrently, bounded so one batch cannot
flood the upstream. The API has no beam search, so `beam_size` is ignored.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import Any

import httpx

from peakgate.backends.base import CostModel, DecodeOptions, Health
from peakgate.clock import Clock, MonotonicClock
from peakgate.errors import BackendError, ConfigError, EngineTimeout, PeakgateError, Unavailable, UnsupportedPair

LANGUAGE_NAMES = {
    "ca": "Catalan", "de": "German", "en": "English", "es": "Spanish", "eu": "Basque", "fr": "French",
    "gl": "Galician", "it": "Italian", "nl": "Dutch", "pt": "Portuguese",
}
_RETRY_LATER_STATUSES = frozenset({429, 503})  # the upstream is busy, not broken
_BODY_SNIPPET = 200


def system_prompt(source: str, target: str) -> str:
    src, tgt = LANGUAGE_NAMES.get(source, source), LANGUAGE_NAMES.get(target, target)
    return (
        f"You are a translation engine. Translate the user's text from {src} to {tgt}. "
        "Reply with the translation only."
    )


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return float(response.headers["retry-after"])
    except (KeyError, ValueError):  # absent, or an HTTP date we do not bother parsing
        return None


def _check_status(response: httpx.Response) -> None:
    if response.is_success:
        return
    detail = f"upstream answered HTTP {response.status_code}: {response.text[:_BODY_SNIPPET]}"
    if response.status_code in _RETRY_LATER_STATUSES:
        raise Unavailable(detail, retry_after_s=_retry_after(response))
    raise BackendError(detail)


def _content(response: httpx.Response) -> str:
    """`choices[0].message.content`, or BackendError when the body is not a chat completion."""
    try:
        content = response.json()["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise BackendError(f"upstream sent a malformed chat completion: {response.text[:_BODY_SNIPPET]!r}") from exc
    if not isinstance(content, str):
        raise BackendError(f"upstream chat completion has non-text content: {content!r}")
    return content.strip()  # chat models like to add a trailing newline


class OpenAIBackend:
    """Translates through `POST {base_url}/chat/completions`; `base_url` ends in `/v1`.

    Health is DEGRADED for `error_window_s` after any failed batch: one bad answer says little
    about the next, so it ages out on the clock rather than waiting for a success.
    """

    def __init__(
        self, name: str, base_url: str, api_key: str | None, upstream_model: str,
        pairs: Iterable[tuple[str, str]], *, timeout_s: float = 30.0, max_batch_size: int = 16,
        error_window_s: float = 30.0, clock: Clock | None = None, transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._name = name
        self._base_url = base_url.rstrip("/")
        self._api_key = api_key
        self._upstream_model = upstream_model
        self._pairs = frozenset(pairs)
        if not self._pairs:
            raise ConfigError(f"{name}: an OpenAI backend needs at least one language pair")
        self._timeout_s = timeout_s
        self._max_batch_size = max_batch_size
        self._error_window_s = error_window_s
        self._clock = clock or MonotonicClock()
        self._transport = transport  # tests inject httpx.MockTransport
        self._slots = asyncio.Semaphore(max(1, max_batch_size))
        self._client: httpx.AsyncClient | None = None
        self._last_error_at: float | None = None

    @property
    def name(self) -> str:
        return self._name

    @property
    def pairs(self) -> frozenset[tuple[str, str]]:
        return self._pairs

    async def start(self) -> None:
        if self._client is not None:
            return
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        self._client = httpx.AsyncClient(
            base_url=self._base_url, headers=headers, timeout=self._timeout_s, transport=self._transport
        )
        try:  # a real round trip, so a wrong URL, key or model name fails at start-up
            await self.translate_batch(["Hello."], *min(self._pairs), DecodeOptions())
        except BaseException:
            await self.close()
            raise

    def cost_model(self) -> CostModel:
        return CostModel(self._max_batch_size, (1, self._max_batch_size), self._client is not None)

    def health(self) -> Health:
        if self._client is None:
            return Health.DOWN
        if self._last_error_at is not None and self._clock.now() - self._last_error_at < self._error_window_s:
            return Health.DEGRADED
        return Health.OK

    async def translate_batch(
        self, segments: Sequence[str], source: str, target: str, options: DecodeOptions
    ) -> list[str]:
        if (source, target) not in self._pairs:
            raise UnsupportedPair(f"{self._name} does not translate {source}->{target}")
        client = self._client
        if client is None:
            raise Unavailable(f"{self._name} is not started")
        prompt = system_prompt(source, target)
        try:
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(self._translate_one(client, prompt, s, options)) for s in segments]
        except ExceptionGroup as failures:
            self._last_error_at = self._clock.now()
            first = failures.exceptions[0]
            if isinstance(first, PeakgateError):
                # The caller wants one BackendError, not a group; keep the httpx error as its cause.
                raise first from first.__cause__
            raise
        return [task.result() for task in tasks]

    async def _translate_one(self, client: httpx.AsyncClient, prompt: str, segment: str, options: DecodeOptions) -> str:
        if not segment.strip():
            return ""
        body: dict[str, Any] = {
            "model": self._upstream_model,
            "messages": [{"role": "system", "content": prompt}, {"role": "user", "content": segment}],
            "temperature": 0,
            "max_tokens": options.max_decoding_length,
        }
        async with self._slots:
            try:
                # httpx's timeout is per read; this bounds the whole exchange.
                async with asyncio.timeout(self._timeout_s):
                    response = await client.post("/chat/completions", json=body)
            except (TimeoutError, httpx.TimeoutException) as exc:
                raise EngineTimeout(f"{self._name}: upstream took over {self._timeout_s}s") from exc
            except httpx.HTTPError as exc:
                raise Unavailable(f"{self._name}: cannot reach upstream {self._base_url}: {exc}") from exc
        _check_status(response)
        return _content(response)

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()
