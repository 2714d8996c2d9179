"""deploy/peakgate-autoscaler/: the base plus `peakgate autoscale --provider kubernetes`, its RBAC and config, and the
warm-pool Deployment it sizes and promotes.

Schema validation of every object is `test_manifests.py`'s (it validates every file under deploy/); here: the
config parses with the real loader and names what the overlay applies, the Role grants exactly the requests the
real provider sends (recorded from it by a fake API server), the warm Deployment is the worker standing by, its
readiness probe reads real heartbeats, and the real `peakgate autoscale` runs on the shipped config.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import tomllib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
import test_manifests
import yaml
from test_manifests import (
    CONFIG_KEY,
    DEPLOY,
    OWN_AUTOSCALER,
    Doc,
    _applied,
    _config_text,
    _containers,
    _mounted_config_paths,
    _one,
    _probe_command,
)

from peakgate.cli import _parser as cli_parser
from peakgate.clock import MonotonicClock
from peakgate.config import Settings, load_settings
from peakgate.control.providers.kubernetes import KubernetesProvider, connect_apps_api
from peakgate.scaleout import cluster
from peakgate.scaleout.keys import Keys

# test_manifests' throwaway redis-server, found by pytest under this name (a conftest.py here would shadow the
# `conftest` module that tests/integration imports from).
redis_url = test_manifests.redis_url

AUTOSCALER = "peakgate-autoscaler"
WARM = "peakgate-worker-warm"


@pytest.fixture(scope="module")
def overlay() -> list[Doc]:
    return _applied(OWN_AUTOSCALER)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _autoscaler_config_text(docs: list[Doc]) -> str:
    deployment = _one(docs, "Deployment", AUTOSCALER)
    (volume,) = [v for v in deployment["spec"]["template"]["spec"]["volumes"] if "configMap" in v]
    return str(_one(docs, "ConfigMap", volume["configMap"]["name"])["data"][CONFIG_KEY])


def _load(text: str, tmp_path: Path, name: str = CONFIG_KEY) -> Settings:
    """`text` as `peakgate autoscale --config` reads it: the real loader, file suffix and all."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return load_settings(path)


@pytest.fixture
def shipped(overlay: list[Doc], tmp_path: Path) -> Settings:
    return _load(_autoscaler_config_text(overlay), tmp_path)


# --- what the overlay applies ----------------------------------------------------------------------------------

def test_the_overlay_is_the_base_plus_the_autoscaler_and_its_warm_pool(overlay: list[Doc]) -> None:
    base = {(d["kind"], d["metadata"]["name"]) for d in _applied(DEPLOY / "base")}
    added = {(d["kind"], d["metadata"]["name"]) for d in overlay} - base
    assert added == {("Deployment", WARM), ("PodDisruptionBudget", WARM), ("ConfigMap", AUTOSCALER),
                     ("ServiceAccount", AUTOSCALER), ("Role", AUTOSCALER), ("RoleBinding", AUTOSCALER),
                     ("Deployment", AUTOSCALER), ("Service", AUTOSCALER)}
    assert len(overlay) == len(base) + len(added), "an object of the base is replaced or applied twice"


def test_the_overlay_has_no_other_autoscaler(overlay: list[Doc]) -> None:
    """KEDA's ScaledObject manages an HPA of its own: either would fight `peakgate autoscale` over the counts."""
    assert not [d for d in overlay if d["kind"] in {"ScaledObject", "ScaledJob", "HorizontalPodAutoscaler"}]
    assert not [d for d in overlay if d["apiVersion"].split("/")[0] in {"keda.sh", "autoscaling"}]


def _kustomize_binary() -> list[str] | None:
    if shutil.which("kustomize"):
        return ["kustomize", "build"]
    if shutil.which("kubectl"):
        return ["kubectl", "kustomize"]
    return None


@pytest.mark.parametrize("entry", [".", "keda", "hpa", OWN_AUTOSCALER.name])
def test_kustomize_applies_the_objects_these_tests_read(entry: str) -> None:
    """The tests resolve kustomizations themselves (plain resources only); kustomize must agree where installed."""
    binary = _kustomize_binary()
    if binary is None:
        pytest.skip("neither kustomize nor kubectl installed: the resolver is checked where one is")
    built = subprocess.run([*binary, str(DEPLOY / entry)], capture_output=True, text=True, timeout=60, check=True)

    def canonical(docs: list[Doc]) -> list[str]:
        return sorted(json.dumps(d, sort_keys=True) for d in docs)

    rendered = [d for d in yaml.safe_load_all(built.stdout) if d is not None]
    assert canonical(rendered) == canonical(_applied(DEPLOY / entry))


# --- the autoscaler's config -------------------------------------------------------------------------------------

def test_the_shipped_config_loads_and_names_the_overlays_deployments(overlay: list[Doc], shipped: Settings) -> None:
    autoscale = shipped.autoscale
    assert autoscale.provider == "kubernetes"
    kube = autoscale.kubernetes
    assert kube.api_url is None, "in the cluster the provider must use the pod's service account"
    deployments = {d["metadata"]["name"]: d for d in overlay if d["kind"] == "Deployment"}
    for name in (kube.deployment, kube.warm_deployment):
        assert name in deployments, f"[autoscale.kubernetes] names {name}, which the overlay does not apply"
        assert deployments[name]["metadata"]["namespace"] == kube.namespace
    assert kube.deployment == "peakgate-worker" and kube.warm_deployment == WARM
    assert 1 <= autoscale.clamps.min_replicas <= autoscale.clamps.max_replicas
    assert autoscale.warm.replicas >= 1, "a warm Deployment with an empty pool would be dead weight"


def test_the_shipped_config_reads_the_queue_the_workers_use(overlay: list[Doc], shipped: Settings,
                                                            tmp_path: Path) -> None:
    """The autoscaler measures the streams of its own config's models on its own config's Redis: they must be the
    gateways' and workers'."""
    workers = _load(_config_text(overlay), tmp_path, "workers.toml")
    assert shipped.queue == workers.queue
    assert shipped.models == workers.models
    autoscaler_toml = tomllib.loads(_autoscaler_config_text(overlay))
    assert set(autoscaler_toml["queue"]) == set(tomllib.loads(_config_text(overlay))["queue"])


def test_the_shipped_config_needs_no_gateway_signals(shipped: Settings) -> None:
    """No gateways are listed (a load-balanced Service mixes the pods' counters), so the policy must be one whose
    levels read Redis: threshold's queue and CPU levels."""
    autoscale = shipped.autoscale
    assert autoscale.gateways == ()
    policy = autoscale.policy
    assert policy.kind == "threshold"
    assert policy.queue is not None and policy.cpu is not None


def test_a_broken_config_is_refused_by_the_loader(overlay: list[Doc], tmp_path: Path) -> None:
    """The loader the tests rely on refuses what the shipped text could get wrong (the check is not vacuous)."""
    from peakgate.errors import ConfigError

    text = _autoscaler_config_text(overlay)
    for old, new in (("warm_deployment", "warm_deploymnet"), ('provider = "kubernetes"', 'provider = "k8s"'),
                     ("min_replicas = 2", "min_replicas = 20")):
        assert old in text
        with pytest.raises(ConfigError):
            _load(text.replace(old, new, 1), tmp_path, "broken.toml")


# --- the autoscaler Deployment and its Service -----------------------------------------------------------------

def test_the_autoscaler_runs_once_on_its_mounted_config(overlay: list[Doc]) -> None:
    deployment = _one(overlay, "Deployment", AUTOSCALER)
    spec = deployment["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"]["type"] == "Recreate", "a rolling update would run two loops side by side"
    (container,) = _containers(deployment)
    args = cli_parser().parse_args(container["args"][1:])  # what `peakgate` makes of them
    assert container["args"][0] == "peakgate"
    assert (args.command, args.provider) == ("autoscale", "kubernetes")
    volumes = {v["name"]: v for v in spec["template"]["spec"]["volumes"]}
    mounts = {f"{m['mountPath']}/{CONFIG_KEY}": volumes[m["name"]] for m in container["volumeMounts"]}
    assert mounts[str(args.config)]["configMap"]["name"] == AUTOSCALER
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert {m["mountPath"] for m in container["volumeMounts"] if not m.get("readOnly")} == {"/tmp"}


def test_the_metrics_port_is_exposed_for_prometheus(overlay: list[Doc], shipped: Settings) -> None:
    deployment = _one(overlay, "Deployment", AUTOSCALER)
    (container,) = _containers(deployment)
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert shipped.autoscale.metrics_port is not None
    assert ports == {"metrics": shipped.autoscale.metrics_port}
    assert shipped.autoscale.metrics_host == "0.0.0.0", "bound to loopback, nothing outside the pod could scrape it"
    service = _one(overlay, "Service", AUTOSCALER)
    assert all(deployment["spec"]["template"]["metadata"]["labels"].get(k) == v
               for k, v in service["spec"]["selector"].items())
    (port,) = service["spec"]["ports"]
    assert port["targetPort"] == "metrics" and port["port"] == shipped.autoscale.metrics_port
    for notes in (service["metadata"]["annotations"], deployment["spec"]["template"]["metadata"]["annotations"]):
        assert notes["prometheus.io/scrape"] == "true"
        assert int(notes["prometheus.io/port"]) == shipped.autoscale.metrics_port
    assert container["readinessProbe"]["httpGet"]["port"] == "metrics"


# --- the warm pool -----------------------------------------------------------------------------------------------

def test_the_warm_deployment_is_the_worker_standing_by(overlay: list[Doc]) -> None:
    worker, warm = _one(overlay, "Deployment", "peakgate-worker"), _one(overlay, "Deployment", WARM)
    assert "replicas" not in warm["spec"], "the autoscaler owns the pool's size; a replicas field resets it"
    (container,) = _containers(warm)
    args = cli_parser().parse_args(container["args"][1:])
    assert container["args"][0] == "peakgate" and args.command == "worker"
    assert args.standby is True, "without --standby the pool serves at once and holds nothing in reserve"
    assert str(args.config) in set(_mounted_config_paths(warm, overlay))

    # Everything else is the worker's: same image, config, security context, resources, volumes, grace period.
    def normalised(deployment: Doc) -> Doc:
        copied = copy.deepcopy(deployment)
        copied["metadata"]["name"] = "*"
        for labels in (copied["metadata"]["labels"], copied["spec"]["selector"]["matchLabels"],
                       copied["spec"]["template"]["metadata"]["labels"]):
            labels["app.kubernetes.io/component"] = "*"
        (inner,) = copied["spec"]["template"]["spec"]["containers"]
        inner["args"] = [a for a in inner["args"] if a != "--standby"]
        inner["readinessProbe"]["exec"]["command"][2] = "*"  # its own readiness rule: the next test
        return copied

    assert normalised(warm) == normalised(worker)
    assert warm["metadata"]["labels"]["app.kubernetes.io/component"] != "worker", \
        "the worker's selector, PodDisruptionBudget and autoscalers must not count warm pods"


@dataclass(frozen=True)
class Beat:
    ready: bool
    warm: bool
    standby: bool


def _run_probe(command: list[str], config: Path) -> int:
    return subprocess.run([sys.executable, *command[1:3], str(config)], timeout=30, check=False).returncode


def test_the_warm_readiness_probe_is_ready_standing_by_and_promoted(overlay: list[Doc], redis_url: str,
                                                                   tmp_path: Path) -> None:
    """The probe, run as the kubelet runs it, against heartbeats encoded by the worker's own code."""
    command = _probe_command(overlay, WARM)
    assert command[3] in set(_mounted_config_paths(_one(overlay, "Deployment", WARM), overlay))
    queue = tomllib.loads(_config_text(overlay))["queue"]
    config = tmp_path / CONFIG_KEY
    config.write_text(_config_text(overlay).replace(queue["redis_url"], redis_url), encoding="utf-8")
    keys = Keys(queue["stream_prefix"])
    client = redis.Redis.from_url(redis_url)

    def probe_with(host: str, beat: Beat) -> int:
        client.flushdb()
        worker_id = f"{host}-{os.getpid()}-{uuid.uuid4().hex[:4]}"  # as peakgate.scaleout.process names workers
        heartbeat = cluster.Heartbeat(worker=worker_id, pid=os.getpid(), ready=beat.ready, draining=not beat.ready,
                                      models={}, held=0, hold_limit=1, counts=cluster.Counts(), at_wall_s=time.time(),
                                      warm=beat.warm, standby=beat.standby)
        client.set(keys.heartbeat(worker_id), cluster.encode_beat(heartbeat), px=10_000)
        return _run_probe(command, config)

    me = socket.gethostname()
    try:
        assert _run_probe(command, config) == 1, "no heartbeat yet: not ready"
        assert probe_with(me, Beat(ready=True, warm=True, standby=True)) == 0, "standing by, models warm"
        assert probe_with(me, Beat(ready=True, warm=True, standby=False)) == 0, "promoted: serving, still ready"
        assert probe_with(me, Beat(ready=False, warm=True, standby=True)) == 1, "warming up or draining"
        assert probe_with(me, Beat(ready=True, warm=False, standby=False)) == 1, "started without --standby"
        assert probe_with(me + "-other", Beat(ready=True, warm=True, standby=True)) == 1, "another pod's beat"
    finally:
        client.close()


# --- RBAC: exactly what the provider sends --------------------------------------------------------------------

_RESOURCE_PATH = re.compile(r"^/apis/(?P<group>[^/]+)/(?P<version>[^/]+)/namespaces/(?P<namespace>[^/]+)/"
                            r"(?P<resource>[^/]+)/(?P<name>[^/]+)(?:/(?P<subresource>[^/]+))?$")
_VERBS = {"GET": "get", "PATCH": "patch", "PUT": "update", "DELETE": "delete", "POST": "create"}


@dataclass(frozen=True)
class Request:
    """A request's RBAC attributes, as the API server's authorizer sees them."""

    verb: str
    group: str
    resource: str  # with its subresource: deployments/scale
    name: str
    namespace: str


def _attributes(method: str, path: str) -> Request:
    match = _RESOURCE_PATH.match(path.split("?", maxsplit=1)[0])
    assert match is not None, f"not a namespaced named resource: {method} {path}"
    resource = match["resource"] + (f"/{match['subresource']}" if match["subresource"] else "")
    return Request(_VERBS[method], match["group"], resource, match["name"], match["namespace"])


def _allows(role: Doc, request: Request) -> bool:
    """Kubernetes RBAC's rule matching, wildcards included (so a wildcard rule is found, then refused below)."""
    if role["metadata"]["namespace"] != request.namespace:
        return False
    for rule in role.get("rules", []):
        resources = rule.get("resources", [])
        base, _, sub = request.resource.partition("/")
        if ((request.verb in rule.get("verbs", []) or "*" in rule.get("verbs", []))
                and (request.group in rule.get("apiGroups", []) or "*" in rule.get("apiGroups", []))
                and (request.resource in resources or "*" in resources
                     or (sub and (f"{base}/*" in resources or f"*/{sub}" in resources)))
                and (not rule.get("resourceNames") or request.name in rule["resourceNames"])):
            return True
    return False


def _grants(role: Doc) -> set[Request] | None:
    """Everything the Role allows, spelled out; None when a wildcard or a missing resourceNames makes it open."""
    granted: set[Request] = set()
    for rule in role.get("rules", []):
        fields = [rule.get("verbs", []), rule.get("apiGroups", []), rule.get("resources", []),
                  rule.get("resourceNames", [])]
        if not fields[3] or any("*" in value for values in fields for value in values):
            return None
        granted |= {Request(v, g, r, n, role["metadata"]["namespace"])
                    for v in fields[0] for g in fields[1] for r in fields[2] for n in fields[3]}
    return granted


def _role_problems(role: Doc, requests: set[Request]) -> list[str]:
    problems = [f"refused: {r}" for r in sorted(requests, key=str) if not _allows(role, r)]
    granted = _grants(role)
    if granted is None:
        problems.append("a wildcard or a rule without resourceNames grants more than is used")
    else:
        problems += [f"granted, never used: {g}" for g in sorted(granted - requests, key=str)]
    return problems


@dataclass
class FakeApi:
    """The `scale` subresource of some Deployments, recording every request (method, path)."""

    deployments: dict[str, list[int]]  # name -> [spec.replicas, status.replicas]
    namespace: str
    requests: list[tuple[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def scale(self, name: str) -> dict[str, Any]:
        spec, status = self.deployments[name]
        return {"kind": "Scale", "apiVersion": "autoscaling/v1",
                "metadata": {"name": name, "namespace": self.namespace, "resourceVersion": "1"},
                "spec": {"replicas": spec}, "status": {"replicas": status}}

    def patches(self) -> dict[str, int]:
        with self.lock:
            return {_attributes(m, p).name: self.deployments[_attributes(m, p).name][0]
                    for m, p in self.requests if m == "PATCH"}


def _handler(api: FakeApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._answer()

        def do_PATCH(self) -> None:
            self._answer(json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0")))))

        def do_PUT(self) -> None:
            self._answer(json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0")))))

        def _answer(self, body: Any = None) -> None:
            with api.lock:
                api.requests.append((self.command, self.path))
                match = _RESOURCE_PATH.match(self.path.split("?", maxsplit=1)[0])
                if (match is None or match["subresource"] != "scale" or match["namespace"] != api.namespace
                        or match["name"] not in api.deployments):
                    self._send(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404,
                                     "reason": "NotFound", "message": f"{self.path} not found"})
                    return
                name = match["name"]
                if body is not None:
                    api.deployments[name] = [body["spec"]["replicas"]] * 2  # the controller keeps up at once
                self._send(200, api.scale(name))

        def _send(self, code: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the test reads api.requests

    return Handler


@pytest.fixture
def fake_api(shipped: Settings) -> Iterator[tuple[FakeApi, str]]:
    kube = shipped.autoscale.kubernetes
    assert kube.warm_deployment is not None
    # A Deployment created without `replicas` starts at 1; three warm pods left from an earlier pool size.
    api = FakeApi({kube.deployment: [1, 1], kube.warm_deployment: [3, 3]}, kube.namespace)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(api))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield api, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


async def test_the_role_grants_exactly_what_the_provider_requests(overlay: list[Doc], shipped: Settings,
                                                                 fake_api: tuple[FakeApi, str]) -> None:
    """Every call the provider has (read both scales, scale up and down, size the pool), through the real client
    on the shipped [autoscale.kubernetes]; the Role must allow each request and nothing beyond them."""
    api, url = fake_api
    config = shipped.autoscale.kubernetes.model_copy(update={"api_url": url, "request_timeout_s": 5.0})
    provider = KubernetesProvider(connect_apps_api(config), config, MonotonicClock())
    try:
        await provider.current()
        await provider.scale_to(3)
        await provider.scale_to(2)
        await provider.keep_warm(1)
    finally:
        await provider.close()
    assert api.patches() == {config.deployment: 2, config.warm_deployment: 1}
    requests = {_attributes(method, path) for method, path in api.requests}
    role = _one(overlay, "Role", AUTOSCALER)
    assert _role_problems(role, requests) == []


def test_the_role_check_refuses_too_little_and_too_much(overlay: list[Doc]) -> None:
    """`_role_problems` on Roles one step off the shipped one: each must be reported."""
    role = _one(overlay, "Role", AUTOSCALER)
    (rule,) = role["rules"]
    used = {Request(v, "apps", "deployments/scale", n, "peakgate") for v in ("get", "patch")
            for n in ("peakgate-worker", WARM)}
    assert _role_problems(role, used) == []
    for change in ({"verbs": ["get"]}, {"verbs": ["get", "patch", "update"]}, {"resources": ["deployments"]},
                   {"resources": ["deployments", "deployments/scale"]}, {"resourceNames": ["peakgate-worker"]},
                   {"resourceNames": []}, {"apiGroups": ["*"]}, {"verbs": ["*"]}, {"apiGroups": ["extensions"]}):
        broken = copy.deepcopy(role)
        broken["rules"] = [rule | change]
        assert _role_problems(broken, used), f"a Role with {change} passed"
    elsewhere = copy.deepcopy(role)
    elsewhere["metadata"]["namespace"] = "default"
    assert _role_problems(elsewhere, used)


def test_the_autoscaler_runs_as_the_bound_service_account(overlay: list[Doc]) -> None:
    pod = _one(overlay, "Deployment", AUTOSCALER)["spec"]["template"]["spec"]
    account = _one(overlay, "ServiceAccount", pod["serviceAccountName"])
    assert pod.get("automountServiceAccountToken", account.get("automountServiceAccountToken", True)), \
        "the in-cluster config needs the token"
    bindings = [d for d in overlay if d["kind"] in {"RoleBinding", "ClusterRoleBinding"}]
    assert [b["metadata"]["name"] for b in bindings] == [AUTOSCALER], "no other binding, none cluster-wide"
    (binding,) = bindings
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": AUTOSCALER}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account["metadata"]["name"],
                                    "namespace": account["metadata"]["namespace"]}]
    assert binding["metadata"]["namespace"] == _one(overlay, "Role", AUTOSCALER)["metadata"]["namespace"]
    assert not [d for d in overlay if d["kind"] == "ClusterRole"]


# --- the real process on the shipped config --------------------------------------------------------------------

@pytest.mark.slow
def test_peakgate_autoscale_runs_on_the_shipped_config(overlay: list[Doc], shipped: Settings, redis_url: str,
                                                       fake_api: tuple[FakeApi, str], tmp_path: Path) -> None:
    """The Deployment's command line on the shipped config, with only the addresses the pod would have (Redis, the
    API server, the metrics port) pointed here: it scales both Deployments to the config's bounds, serves its
    metrics, and stops cleanly on SIGTERM."""
    api, url = fake_api
    data = tomllib.loads(_autoscaler_config_text(overlay))
    port = _free_port()
    data["queue"]["redis_url"] = redis_url
    data["autoscale"] |= {"metrics_host": "127.0.0.1", "metrics_port": port}
    data["autoscale"]["kubernetes"]["api_url"] = url
    config = tmp_path / "autoscaler.json"  # load_settings reads JSON too: no TOML writer needed
    config.write_text(json.dumps(data), encoding="utf-8")
    (container,) = _containers(_one(overlay, "Deployment", AUTOSCALER))
    args = list(container["args"])
    args[args.index("--config") + 1] = str(config)
    log = tmp_path / "autoscale.log"
    with log.open("wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "peakgate.cli", *args[1:]], stdout=out,
                                   stderr=subprocess.STDOUT)
        try:
            expected = {shipped.autoscale.kubernetes.deployment: shipped.autoscale.clamps.min_replicas,
                        shipped.autoscale.kubernetes.warm_deployment: shipped.autoscale.warm.replicas}
            deadline = time.monotonic() + 90  # a 2-core machine shared with other jobs: imports can be slow
            while api.patches() != expected:
                assert process.poll() is None, log.read_text(encoding="utf-8")
                assert time.monotonic() < deadline, (api.requests, log.read_text(encoding="utf-8"))
                time.sleep(0.2)
            metrics = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
            assert f"peakgate_autoscale_desired_replicas {float(expected['peakgate-worker'])}" in metrics
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=30) == 0, log.read_text(encoding="utf-8")
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)
    role = _one(overlay, "Role", AUTOSCALER)
    assert all(_allows(role, _attributes(m, p)) for m, p in api.requests)

