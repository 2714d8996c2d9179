"""The shared ledger in Redis: buckets and quota counters every gateway uses, one atomic Lua script per decision.

Time comes from Redis itself (`redis.call('TIME')` inside the script), not from the gateways: every gateway then
agrees on when a bucket was last charged, whatever their own clocks say. The script's arithmetic is `bucket.py`'s,
with the same meaning, down to the refusal a tie in wait is blamed on (the key's limiter), so
tests/integration/admission/test_admission_ledger.py runs one scenario table against both. The differences, on
purpose:

- Redis's clock is the Redis host's wall clock. A step back mints nothing (as in `TokenBucket`); a step forward
  refills early by the step. Gateways' monotonic clocks play no part.
- A limiter's state expires once the bucket would be full again (or the shaper's outlet free): no state means
  a full bucket, so idle tenants cost no memory and the answers do not change.

Smoothed classes shape in the script too, on one outlet for the whole cluster: the turn comes back as a delay from
now, which the gateway then sleeps on its own clock (a delay needs no agreement between clocks).

Keys (under `admission.redis_key_prefix`): `quota:{key id}` (characters billed this period, no expiry),
`class:{class}` and `key:{key id}` (limiter states), `replay:{batch id}` (a replayed outage batch). A key id is a
hash of the API key: Redis never holds keys. On Redis Cluster, use a prefix with a hash tag (e.g. `{pg}:adm:`)
so a decision's keys share a slot.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from peakgate.admission.backend import Admitted, OverQuota, OverRate, RateReason, Verdict
from peakgate.admission.keys import key_id
from peakgate.admission.outage import SpendBatch
from peakgate.config import PRIORITY_ORDER, ClassConfig, PriorityClass, Settings
from peakgate.errors import ConfigError, Unavailable

_REPLAY_MARKER_TTL_S = 86_400  # a failed replay is retried within `retry_redis_s`; a day is far beyond that

# The decision. Contract:
#   KEYS[1]       the key's quota counter; KEYS[1 + i]: limiter i's state (a hash), for i = 1..n (n may be 0)
#   ARGV[1]       cost in characters;  ARGV[2]: the key's quota, -1 for none
#   ARGV[3i..3i+2] limiter i: kind ('token' | 'shaper'), rate (characters/s), then burst (token) or the longest
#                 wait for a turn in seconds (shaper)
# Reply {status, seconds (a string: Lua numbers would come back truncated to integers), limiter i, used}:
#   {0, turn_s, 0, used}  admitted and charged to every limiter; wait turn_s for the shaper's turn
#   {1, '0', 0, used}     billing cost would pass the quota; nothing charged
#   {2, wait_s, i, used}  limiter i has the longest wait, wait_s; nothing charged
# `used` is the quota counter as the script read it.
_DECIDE_LUA = """
local EPSILON = 1e-6  -- as bucket.py: float noise, far below one character or one microsecond
local function num(x) return string.format('%.17g', x) end
local cost, quota = tonumber(ARGV[1]), tonumber(ARGV[2])
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
if quota >= 0 and used + cost > quota then return {1, '0', 0, used} end
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1e6
local states, worst, which = {}, 0, 0
for i = 1, #KEYS - 1 do
  local key, rate, param = KEYS[i + 1], tonumber(ARGV[3 * i + 1]), tonumber(ARGV[3 * i + 2])
  local wait
  if ARGV[3 * i] == 'token' then
    local h = redis.call('HMGET', key, 'tokens', 'stamp')
    local tokens, stamp = tonumber(h[1]) or param, tonumber(h[2]) or now
    if now > stamp then  -- a clock that steps back must not mint tokens
      tokens, stamp = math.min(param, tokens + (now - stamp) * rate), now
    end
    local deficit = math.min(cost, param) - tokens  -- above the burst: admitted from a full bucket, into debt
    wait = deficit > EPSILON and deficit / rate or 0
    states[i] = {tokens, stamp}
  else
    local free_at = tonumber(redis.call('HGET', key, 'free_at')) or now
    wait = free_at - now - param
    if wait <= EPSILON / rate then wait = 0 end
    states[i] = {free_at}
  end
  if wait > 0 and wait >= worst then worst, which = wait, i end
end
if which > 0 then return {2, num(worst), which, used} end
local turn = 0
for i = 1, #KEYS - 1 do
  local key, rate, param = KEYS[i + 1], tonumber(ARGV[3 * i + 1]), tonumber(ARGV[3 * i + 2])
  local full_in  -- seconds until the state equals no state at all (a full bucket, a free outlet)
  if ARGV[3 * i] == 'token' then
    local tokens, stamp = states[i][1] - cost, states[i][2]
    redis.call('HSET', key, 'tokens', num(tokens), 'stamp', num(stamp))
    full_in = (param - tokens) / rate + (stamp - now)
  else
    local free_at = states[i][1]
    turn = math.max(turn, free_at - now)
    free_at = math.max(free_at, now) + cost / rate
    redis.call('HSET', key, 'free_at', num(free_at))
    full_in = free_at - now
  end
  redis.call('PEXPIRE', key, string.format('%d', math.ceil(math.min(full_in, 1e9) * 1000) + 1000))
end
return {0, num(turn), 0, used}
"""

# An outage's local spend, added once per batch. KEYS[1]: the batch's marker; KEYS[2..]: quota counters;
# ARGV[1]: the marker's lifetime in seconds; ARGV[2..]: characters per counter. Reply: 1 added, 0 added before.
_REPLAY_LUA = """
if not redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[1]) then return 0 end
for i = 2, #KEYS do redis.call('INCRBY', KEYS[i], ARGV[i]) end
return 1
"""


@dataclass(frozen=True, slots=True)
class _Limiter:
    state_key: str
    kind: str  # the script's 'token' | 'shaper'
    rate: float
    param: float  # burst (token) or longest wait for a turn (shaper)
    reason: RateReason


class RedisLedger:
    """`shared.Ledger` in Redis: `admit` is one EVALSHA (the script is loaded once per server; a Redis that lost
    it answers NOSCRIPT, and it is loaded again), `record` one INCRBY, `used` one GET. Redis errors are raised as
    `Unavailable` from the Redis error; there are no client-side retries (the caller falls back instead)."""

    def __init__(self, client: aioredis.Redis, settings: Settings) -> None:
        self._client = client
        self._prefix = settings.admission.redis_key_prefix
        self._decide = client.register_script(_DECIDE_LUA)
        self._replay = client.register_script(_REPLAY_LUA)
        self._quotas = {k.key: k.quota_chars for k in settings.keys if k.quota_chars is not None}
        self._key_limiters = {
            k.key: _Limiter(f"{self._prefix}key:{key_id(k.key)}", "token", k.rate_chars_per_s, k.burst_chars,
                            "key_rate") for k in settings.keys
        }
        self._class_limiters = {name: self._class_limiter(name, settings.classes.get(name, ClassConfig()))
                                for name in PRIORITY_ORDER}

    @classmethod
    def from_settings(cls, settings: Settings) -> RedisLedger:
        timeout = settings.admission.redis_socket_timeout_s
        try:
            client = aioredis.Redis.from_url(settings.admission.redis_url, socket_timeout=timeout,
                                             socket_connect_timeout=timeout, retry=Retry(NoBackoff(), 0))
        except ValueError as exc:
            raise ConfigError(f"admission.redis_url is not a Redis URL: {exc}") from exc
        return cls(client, settings)

    def _class_limiter(self, name: PriorityClass, cls: ClassConfig) -> _Limiter:
        kind, param = ("shaper", cls.max_smoothing_delay_s) if cls.smoothing else ("token", cls.burst_chars)
        return _Limiter(f"{self._prefix}class:{name}", kind, cls.rate_chars_per_s, param, "class_rate")

    async def admit(self, key: str | None, characters: int, priority: PriorityClass, *, rates: bool
                    ) -> tuple[Verdict, int]:
        limiters = self._limiters(key, priority) if rates else []
        quota = self._quotas.get(key) if key is not None else None
        keys = [self._quota_key(key), *(limiter.state_key for limiter in limiters)]
        args: list[str | int | float] = [characters, -1 if quota is None else quota]
        for limiter in limiters:
            args += [limiter.kind, limiter.rate, limiter.param]
        reply = await self._call("admission script", self._decide(keys=keys, args=args))
        status, seconds, which, used = int(reply[0]), float(reply[1]), int(reply[2]), int(reply[3])
        if status == 1:
            assert quota is not None  # the script refuses by quota only when there is one
            return OverQuota(used, quota), used
        if status == 2:
            return OverRate(seconds, limiters[which - 1].reason), used
        return Admitted(seconds), used

    def _limiters(self, key: str | None, priority: PriorityClass) -> list[_Limiter]:
        key_limiter = self._key_limiters.get(key) if key is not None else None
        return [self._class_limiters[priority], *([key_limiter] if key_limiter is not None else [])]

    async def record(self, key: str | None, characters: int) -> int:
        used: int = await self._call("INCRBY", self._client.incrby(self._quota_key(key), characters))
        return used

    async def used(self, key: str | None) -> int:
        raw: bytes | None = await self._call("GET", self._client.get(self._quota_key(key)))
        return int(raw or 0)

    async def replay(self, batch: SpendBatch) -> None:
        keys = [f"{self._prefix}replay:{batch.batch_id}", *(self._quota_key(k) for k in batch.spend)]
        args = [_REPLAY_MARKER_TTL_S, *batch.spend.values()]
        await self._call("replay script", self._replay(keys=keys, args=args))

    async def reset(self, keys: list[str | None]) -> None:
        await self._call("DEL", self._client.delete(*(self._quota_key(k) for k in keys)))

    async def close(self) -> None:
        await self._client.aclose()

    def _quota_key(self, key: str | None) -> str:
        return f"{self._prefix}quota:{key_id(key) if key is not None else 'anonymous'}"

    async def _call(self, what: str, call: Awaitable[Any]) -> Any:
        try:
            return await call
        except (RedisError, OSError, TimeoutError) as exc:
            raise Unavailable(f"shared admission: redis {what} failed: {exc!r}") from exc
