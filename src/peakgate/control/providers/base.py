"""What every provider is: the contract's `Provider` plus the warm pool's `keep_warm`, and its one error."""

from __future__ import annotations

from typing import Protocol

from peakgate.control.contract import ProviderState
from peakgate.errors import Unavailable
from peakgate.scaleout.cluster import Heartbeat


class ProviderError(Unavailable):
    """A provider could not read or change its replicas (the API refused or was out of reach); the loop
    reports it and tries again later."""

    code = "provider_error"


class ScalingProvider(Protocol):
    async def current(self) -> ProviderState: ...

    async def scale_to(self, replicas: int) -> ProviderState: ...

    async def keep_warm(self, replicas: int) -> None: ...

    async def close(self) -> None: ...


class BeatSource(Protocol):
    async def heartbeats(self) -> list[Heartbeat]: ...
