"""The Kubernetes provider: the worker Deployment and the warm-pool Deployment, scaled through their `scale`
subresource (`autoscaling/v1` Scale) with the official `kubernetes` client.

A Scale says how many pods are wanted (`spec.replicas`) and how many exist (`status.replicas`): fewer existing
are starting, more are draining (Kubernetes sends SIGTERM, and a worker drains within its grace period). Which
pods are ready the heartbeats tell (the signals and the warm pool read them). The client is synchronous, so
each call runs in a thread; every API failure becomes `ProviderError`, which the loop reports and retries.
The warm Deployment runs `peakgate worker --standby`; promotion is a Redis flag (`control.warm`), not a pod
change, so neither Deployment's count moves when a warm pod serves.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from peakgate.clock import Clock
from peakgate.control.contract import ProviderState, ReplicaEvent
from peakgate.control.loop_settings import KubernetesProviderConfig
from peakgate.control.providers.base import ProviderError

_log = logging.getLogger(__name__)
_T = TypeVar("_T")


def connect_apps_api(config: KubernetesProviderConfig) -> Any:
    """An `AppsV1Api` for `config.api_url`, else the pod's service account, else the kubeconfig."""
    from kubernetes import client
    from kubernetes import config as kube_config

    configuration = client.Configuration()
    if config.api_url is not None:
        configuration.host = config.api_url
    else:
        try:
            kube_config.load_incluster_config(client_configuration=configuration)
        except kube_config.ConfigException:
            try:
                kube_config.load_kube_config(client_configuration=configuration)
            except (kube_config.ConfigException, OSError) as exc:
                raise ProviderError(f"no Kubernetes API to talk to (not in a cluster, no kubeconfig): {exc}") from exc
    return client.AppsV1Api(client.ApiClient(configuration))


class KubernetesProvider:
    def __init__(self, api: Any, config: KubernetesProviderConfig, clock: Clock) -> None:
        self._api = api
        self._config = config
        self._clock = clock
        self._events: list[ReplicaEvent] = []

    async def current(self) -> ProviderState:
        wanted, existing = await self._scale(self._config.deployment)
        warm = 0
        if self._config.warm_deployment is not None:
            warm_wanted, warm_existing = await self._scale(self._config.warm_deployment)
            warm = min(warm_wanted, warm_existing)
        events, self._events = tuple(self._events), []
        return ProviderState(serving=min(wanted, existing), starting=max(0, wanted - existing),
                             draining=max(0, existing - wanted), warm=warm, events=events)

    async def scale_to(self, replicas: int) -> ProviderState:
        await self._patch(self._config.deployment, replicas)
        return await self.current()

    async def keep_warm(self, replicas: int) -> None:
        if self._config.warm_deployment is None:
            if replicas:
                _log.debug("no warm Deployment configured: a warm pool of %d is not kept", replicas)
            return
        await self._patch(self._config.warm_deployment, replicas)

    async def close(self) -> None:
        await asyncio.to_thread(self._api.api_client.close)

    async def _scale(self, name: str) -> tuple[int, int]:
        """(spec.replicas, status.replicas) of Deployment `name`."""
        scale = await self._call(f"read the scale of {name}", lambda: self._api.read_namespaced_deployment_scale(
            name, self._config.namespace, _request_timeout=self._config.request_timeout_s))
        return int(scale.spec.replicas or 0), int(scale.status.replicas or 0)

    async def _patch(self, name: str, replicas: int) -> None:
        wanted, _ = await self._scale(name)
        if wanted == replicas:
            return
        # A dict body: the client sends it as a strategic merge patch.
        await self._call(f"scale {name} to {replicas}", lambda: self._api.patch_namespaced_deployment_scale(
            name, self._config.namespace, {"spec": {"replicas": replicas}},
            _request_timeout=self._config.request_timeout_s))
        kind = "requested" if replicas > wanted else "draining"
        self._events.append(ReplicaEvent(name, kind, self._clock.now(), f"{wanted} -> {replicas} replicas"))

    async def _call(self, what: str, call: Callable[[], _T]) -> _T:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            return await asyncio.to_thread(call)
        except ApiException as exc:
            raise ProviderError(f"Kubernetes refused to {what}: {exc.status} {exc.reason}") from exc
        except (HTTPError, OSError) as exc:
            raise ProviderError(f"Kubernetes API out of reach ({what}): {exc}") from exc
