"""deploy/: every manifest validated against the Kubernetes schemas, and the references between them checked.

Built-in kinds go through `kubernetes-validate` (it ships the upstream JSON schemas of each Kubernetes release;
strict: unknown fields are errors, as `kubectl apply --validate=strict` makes them). The KEDA ScaledObject is a
custom resource: it is checked with `jsonschema` against the openAPIV3Schema of KEDA's CRD, committed under
schemas/ (source and licence in its header), made strict the same way. The same `_errors` that passes the real
manifests must fail broken copies of them (the negative tests), so a validator that checks nothing cannot pass.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import tomllib
import uuid
from collections.abc import Iterator
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import kubernetes_validate
import pytest
import redis
import yaml
from referencing import Registry, Resource
from starlette.testclient import TestClient

from peakgate.api.app import create_app
from peakgate.config import PRIORITY_ORDER, Settings, default_models, default_tiers
from peakgate.service import Service

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
OWN_AUTOSCALER = DEPLOY / "peakgate-autoscaler"  # base + `peakgate autoscale` and its warm pool
KEDA_SCHEMA = Path(__file__).parent / "schemas" / "keda.sh_scaledobject_v1alpha1.openapiv3.yaml"
# The oldest Kubernetes release these manifests promise to fit, and the newest the installed package knows.
K8S_VERSIONS = ("1.30", ".".join(kubernetes_validate.latest_version().split(".")[:2]))
CONFIG_KEY = "peakgate.toml"

Doc = dict[str, Any]


# --- loading -------------------------------------------------------------------------------------------------

def _docs(path: Path) -> list[Doc]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]


MANIFESTS = sorted(p for p in DEPLOY.rglob("*.yaml") if p.name != "kustomization.yaml")
ALL_DOCS = [(p, i, d) for p in MANIFESTS for i, d in enumerate(_docs(p))]


def _kustomize(directory: Path) -> list[Path]:
    """The manifest files a kustomization applies, resolving the `resources` it names (files and directories)."""
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text(encoding="utf-8"))
    assert kustomization["apiVersion"] == "kustomize.config.k8s.io/v1beta1"
    assert kustomization["kind"] == "Kustomization"
    # Only plain resources: a transformer (namespace, labels, patches) would make these files differ from what
    # is applied, and this test would be checking the wrong objects.
    assert set(kustomization) == {"apiVersion", "kind", "resources"}, f"{directory}: modelled keys only"
    found: list[Path] = []
    for entry in kustomization["resources"]:
        target = (directory / entry).resolve()
        if target.is_dir():
            found += _kustomize(target)
        else:
            assert target.is_file(), f"{directory}/kustomization.yaml names missing {entry}"
            found.append(target)
    assert len(found) == len(set(found)), f"{directory}: a manifest is included twice"
    return found


def _applied(directory: Path) -> list[Doc]:
    return [d for p in _kustomize(directory) for d in _docs(p)]


def _one(docs: list[Doc], kind: str, name: str) -> Doc:
    matches = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(matches) == 1, f"expected one {kind}/{name}, found {len(matches)}"
    return matches[0]


def _overlay_docs(directory: Path) -> list[Doc]:
    """What an overlay applies beyond the base."""
    base = {p.resolve() for p in _kustomize(DEPLOY / "base")}
    return [d for p in _kustomize(directory) if p.resolve() not in base for d in _docs(p)]


@pytest.fixture(scope="module")
def docs() -> list[Doc]:
    """Every object of every entry point, once (their names differ, so the references between them are checked
    across all of them)."""
    overlays = (DEPLOY / "keda", DEPLOY / "hpa", OWN_AUTOSCALER)
    return _applied(DEPLOY / "base") + [d for overlay in overlays for d in _overlay_docs(overlay)]


def _containers(workload: Doc) -> list[Doc]:
    return list(workload["spec"]["template"]["spec"]["containers"])


def _workloads(docs: list[Doc]) -> list[Doc]:
    return [d for d in docs if d["kind"] in {"Deployment", "StatefulSet"}]


def _selects(selector: dict[str, str], workload: Doc) -> bool:
    labels = workload["spec"]["template"]["metadata"]["labels"]
    return all(labels.get(k) == v for k, v in selector.items())


def _config_text(docs: list[Doc]) -> str:
    return str(_one(docs, "ConfigMap", "peakgate-config")["data"][CONFIG_KEY])


def _queue_table(docs: list[Doc]) -> dict[str, Any]:
    return dict(tomllib.loads(_config_text(docs))["queue"])


def _settings(docs: list[Doc]) -> Settings:
    """The config file as `peakgate serve` reads it (`load_settings` adds the embedded models when it names none)."""
    data = tomllib.loads(_config_text(docs))
    if "queue" not in Settings.model_fields:  # until `Settings.queue` lands, the table is checked on its own
        data.pop("queue")
    if "models" not in data:
        data |= {"models": default_models(), "tiers": data.get("tiers", default_tiers())}
    return Settings.model_validate(data)


# --- the validators --------------------------------------------------------------------------------------------

def _strict(schema: Any) -> Any:
    """A CRD schema with unknown fields refused (the API server prunes them; `--validate=strict` refuses them)."""
    if isinstance(schema, dict):
        schema = {k: _strict(v) for k, v in schema.items()}
        if "properties" in schema and "additionalProperties" not in schema \
                and not schema.get("x-kubernetes-preserve-unknown-fields"):
            schema["additionalProperties"] = False
        return schema
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


@cache
def _keda_validator() -> jsonschema.Draft202012Validator:
    schema = _strict(yaml.safe_load(KEDA_SCHEMA.read_text(encoding="utf-8")))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@cache
def _object_meta_validator(version: str) -> jsonschema.Draft202012Validator:
    """ObjectMeta from kubernetes-validate's schemas: a CRD's own schema leaves `metadata` open."""
    folder = files("kubernetes_validate") / "kubernetes-json-schema" / f"v{version}.0-local-strict"
    schema = json.loads((folder / "objectmeta-meta-v1.json").read_text(encoding="utf-8"))
    definitions = json.loads((folder / "_definitions.json").read_text(encoding="utf-8"))
    registry: Registry[Any] = Resource.from_contents(definitions) @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.Draft202012Validator(schema, registry=registry)


def _errors(doc: Doc, version: str) -> list[str]:
    """Why the API server (of `version`, with KEDA's CRD installed) would refuse `doc`; [] when it would not."""
    if doc.get("apiVersion") == "keda.sh/v1alpha1" and doc.get("kind") == "ScaledObject":
        found = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in _keda_validator().iter_errors(doc)]
        found += [f"metadata.{'.'.join(map(str, e.absolute_path))}: {e.message}"
                  for e in _object_meta_validator(version).iter_errors(doc.get("metadata", {}))]
        # The CRD's one CEL rule (x-kubernetes-validations), which jsonschema cannot evaluate.
        spec = doc.get("spec", {})
        low, high = (spec.get("minReplicaCount", 0), spec.get("maxReplicaCount", 100)) if isinstance(spec, dict) \
            else (0, 100)
        if isinstance(low, int) and isinstance(high, int) and low > high:  # other types: reported above
            found.append("spec: minReplicaCount must be less than or equal to maxReplicaCount")
        return found
    try:
        kubernetes_validate.validate(doc, version, strict=True)
    except kubernetes_validate.ValidationError as exc:
        return [f"{'.'.join(map(str, exc.absolute_path))}: {exc.message}"]
    except kubernetes_validate.SchemaNotFoundError as exc:
        return [exc.message]
    return []


# --- every manifest, validated ---------------------------------------------------------------------------------

@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize(("path", "index", "doc"), ALL_DOCS,
                         ids=[f"{p.relative_to(DEPLOY)}#{i}:{d.get('kind')}" for p, i, d in ALL_DOCS])
def test_manifest_validates_against_the_kubernetes_schemas(path: Path, index: int, doc: Doc, version: str) -> None:
    assert _errors(doc, version) == []


def test_the_keda_schema_is_the_scaledobject_crd() -> None:
    schema = yaml.safe_load(KEDA_SCHEMA.read_text(encoding="utf-8"))
    assert {"scaleTargetRef", "triggers"} <= set(schema["properties"]["spec"]["required"])
    assert "Apache License, Version 2.0" in KEDA_SCHEMA.read_text(encoding="utf-8")


DROP = object()  # as a mutation's value: delete the field


def _mutate(doc: Doc, path: str, value: Any) -> None:
    *parents, last = path.split(".")
    node: Any = doc
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if value is DROP:
        del node[last]
    else:
        node[last] = value


BROKEN: list[tuple[str, str, str, Any]] = [  # file, kind, field, what to set it to
    ("base/gateway.yaml", "Deployment", "spec.replicas", "two"),  # a string where an int is required
    ("base/gateway.yaml", "Deployment", "spec.template.spec.containers.0.readinessprobe", {}),  # unknown field
    ("base/gateway.yaml", "Deployment", "spec.template.spec.containers.0.ports.0.containerPort", "http"),
    ("base/gateway.yaml", "Deployment", "spec.selector", DROP),  # required
    ("base/gateway.yaml", "Service", "spec.ports.0.targetPort", {"name": "http"}),  # int-or-string
    ("base/worker.yaml", "Deployment", "spec.template.spec.terminationGracePeriodSeconds", "120s"),
    ("base/pdb.yaml", "PodDisruptionBudget", "spec.maxUnavailabe", 1),  # typo
    ("base/redis.yaml", "StatefulSet", "spec.volumeClaimTemplates.0.spec.accessModes", "ReadWriteOnce"),
    ("hpa/hpa.yaml", "HorizontalPodAutoscaler", "spec.metrics.0.resource.target.averageUtilization", "70%"),
    ("keda/scaledobject.yaml", "ScaledObject", "spec.maxReplicaCount", "10"),
    ("keda/scaledobject.yaml", "ScaledObject", "spec.scaleTargetref", {"name": "peakgate-worker"}),  # typo
    ("keda/scaledobject.yaml", "ScaledObject", "spec.triggers.0.metadata.lagCount", 8),  # a map of strings
    ("keda/scaledobject.yaml", "ScaledObject", "spec.triggers.0.type", DROP),  # required
    ("keda/scaledobject.yaml", "ScaledObject", "spec.triggers", []),  # minItems 1
    ("keda/scaledobject.yaml", "ScaledObject", "spec.minReplicaCount", 20),  # the CRD's CEL rule: <= max (10)
    ("keda/scaledobject.yaml", "ScaledObject", "metadata.labels", ["worker"]),  # ObjectMeta
    ("peakgate-autoscaler/rbac.yaml", "Role", "rules.0.verb", ["get"]),  # typo of verbs
    ("peakgate-autoscaler/rbac.yaml", "RoleBinding", "roleRef", DROP),  # required
    ("peakgate-autoscaler/rbac.yaml", "ServiceAccount", "automountServiceAccountToken", "yes"),
    ("peakgate-autoscaler/autoscaler.yaml", "Deployment", "spec.strategy.type", {"Recreate": {}}),
    ("peakgate-autoscaler/worker-warm.yaml", "Deployment", "spec.template.spec.containers.0.args", "--standby"),
]


@pytest.mark.parametrize(("file", "kind", "field", "value"), BROKEN,
                         ids=[f"{f}:{k}:{p.rsplit('.', 1)[-1]}" for f, k, p, _ in BROKEN])
def test_a_broken_manifest_is_refused(file: str, kind: str, field: str, value: Any) -> None:
    doc = copy.deepcopy(next(d for d in _docs(DEPLOY / file) if d["kind"] == kind))
    assert _errors(doc, K8S_VERSIONS[-1]) == []
    _mutate(doc, field, value)
    errors = _errors(doc, K8S_VERSIONS[-1])
    assert errors, f"the validator accepted a broken {kind} from {file}"
    assert field.rsplit(".", 1)[-1] in " ".join(errors), errors  # refused for the broken field, not another


def test_a_kind_without_a_schema_is_refused() -> None:
    assert _errors({"apiVersion": "peakgate.dev/v1", "kind": "Gateway", "metadata": {"name": "x"}}, "1.30")


# --- kustomizations --------------------------------------------------------------------------------------------

def test_every_manifest_is_applied_by_a_kustomization() -> None:
    applied = {*_kustomize(DEPLOY), *_kustomize(DEPLOY / "hpa"), *_kustomize(OWN_AUTOSCALER)}
    assert applied == {p.resolve() for p in MANIFESTS}


def _runs_peakgate_autoscale(doc: Doc) -> bool:
    return doc["kind"] in {"Deployment", "StatefulSet"} and any(
        [*c.get("command", []), *c.get("args", [])][:2] == ["peakgate", "autoscale"] for c in _containers(doc))


def test_each_entry_point_applies_exactly_one_autoscaler() -> None:
    """Two autoscalers on one Deployment fight over its replica count: every entry point brings exactly one."""
    def autoscalers(directory: Path) -> list[str]:
        kinds = {"ScaledObject", "HorizontalPodAutoscaler"}
        return sorted(d["kind"] if d["kind"] in kinds else "peakgate autoscale" for d in _applied(directory)
                      if d["kind"] in kinds or _runs_peakgate_autoscale(d))

    assert autoscalers(DEPLOY / "base") == []
    assert autoscalers(DEPLOY / "keda") == ["ScaledObject"]
    assert autoscalers(DEPLOY / "hpa") == ["HorizontalPodAutoscaler"]
    assert autoscalers(OWN_AUTOSCALER) == ["peakgate autoscale"]  # neither a ScaledObject nor an HPA
    # The warm pool only makes sense with the autoscaler that sizes and promotes it.
    for directory in (DEPLOY / "base", DEPLOY / "keda", DEPLOY / "hpa"):
        assert not [d for d in _applied(directory) if d["metadata"]["name"] == "peakgate-worker-warm"]
    assert _applied(DEPLOY) == _applied(DEPLOY / "keda")  # `kubectl apply -k deploy/` is the KEDA variant


def test_everything_lives_in_the_namespace_it_creates(docs: list[Doc]) -> None:
    namespace = _one(docs, "Namespace", "peakgate")["metadata"]["name"]
    assert all(d["metadata"].get("namespace") == namespace for d in docs if d["kind"] != "Namespace")


# --- references between objects -------------------------------------------------------------------------------

def test_workloads_select_their_own_pods(docs: list[Doc]) -> None:
    for workload in _workloads(docs):
        assert _selects(workload["spec"]["selector"]["matchLabels"], workload), workload["metadata"]["name"]
        others = [w for w in _workloads(docs) if w is not workload]
        assert not any(_selects(workload["spec"]["selector"]["matchLabels"], w) for w in others)


def test_services_select_one_workload_and_its_named_ports(docs: list[Doc]) -> None:
    for service in (d for d in docs if d["kind"] == "Service"):
        selected = [w for w in _workloads(docs) if _selects(service["spec"]["selector"], w)]
        assert len(selected) == 1, f"Service {service['metadata']['name']} selects {len(selected)} workloads"
        port_names = {p["name"] for c in _containers(selected[0]) for p in c.get("ports", [])}
        assert {p["targetPort"] for p in service["spec"]["ports"]} <= port_names


def test_disruption_budgets_select_one_workload_and_leave_it_running(docs: list[Doc]) -> None:
    budgets = {d["metadata"]["name"]: d for d in docs if d["kind"] == "PodDisruptionBudget"}
    assert set(budgets) == {"peakgate-gateway", "peakgate-worker", "peakgate-worker-warm"}
    for budget in budgets.values():
        selected = [w for w in _workloads(docs) if _selects(budget["spec"]["selector"]["matchLabels"], w)]
        assert [w["metadata"]["name"] for w in selected] == [budget["metadata"]["name"]]
    gateway = _one(docs, "Deployment", "peakgate-gateway")
    assert 0 < budgets["peakgate-gateway"]["spec"]["minAvailable"] < gateway["spec"]["replicas"]  # a drain can go on
    assert budgets["peakgate-worker"]["spec"]["maxUnavailable"] >= 1


@pytest.fixture(scope="module")
def gateway_routes() -> set[str]:
    """The paths in the gateway's own OpenAPI document."""
    app = create_app(Service(Settings()))
    return set(TestClient(app).get("/openapi.json").json()["paths"])


def test_http_probes_and_scrape_path_are_gateway_routes(docs: list[Doc], gateway_routes: set[str]) -> None:
    gateway = _one(docs, "Deployment", "peakgate-gateway")
    (container,) = _containers(gateway)
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    port_names = {p["name"] for p in container["ports"]}
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"]["path"] in gateway_routes
        assert container[probe]["httpGet"]["port"] in port_names
    annotations = gateway["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/path"] in gateway_routes
    assert int(annotations["prometheus.io/port"]) == container["ports"][0]["containerPort"]


def test_the_config_map_is_a_valid_config_for_both_processes(docs: list[Doc]) -> None:
    settings = _settings(docs)
    queue = _queue_table(docs)
    assert queue["backend"] == "redis"
    # Explicit, not code defaults: the ScaledObject's stream names and group are derived from them.
    assert {"stream_prefix", "group", "redis_url"} <= set(queue)
    redis = _one(docs, "Service", "redis")
    url = urlsplit(queue["redis_url"])
    assert (url.hostname, url.port) == (redis["metadata"]["name"], redis["spec"]["ports"][0]["port"])
    gateway = _one(docs, "Deployment", "peakgate-gateway")
    (container,) = _containers(gateway)
    args = container["args"]
    assert args[:2] == ["peakgate", "serve"]
    assert int(args[args.index("--port") + 1]) == container["ports"][0]["containerPort"] == settings.port
    assert settings.host == "0.0.0.0"
    mounts = {m["mountPath"] for m in container["volumeMounts"] if not m.get("readOnly")}
    assert str(settings.data_dir) in mounts, "data_dir must be a writable volume (the root filesystem is not)"
    assert str(settings.models_dir) == "/app/models"  # where deploy/Dockerfile puts them


def test_the_queue_table_is_a_valid_queue_config(docs: list[Doc]) -> None:
    scaleout = pytest.importorskip("peakgate.scaleout.settings")
    queue = scaleout.QueueConfig.model_validate(_queue_table(docs))
    assert queue.backend == "redis"


def _config_paths(workload: Doc) -> Iterator[str]:
    """Every config file path a workload's container is told to read (arguments, environment, probe)."""
    (container,) = _containers(workload)
    args = container["args"]
    if "--config" in args:
        yield args[args.index("--config") + 1]
    yield from (e["value"] for e in container.get("env", []) if e["name"] == "PEAKGATE_CONFIG")
    probe = container.get("readinessProbe", {}).get("exec", {}).get("command", [])
    yield from probe[3:]


def _mounted_config_paths(workload: Doc, docs: list[Doc]) -> list[str]:
    config_map = _one(docs, "ConfigMap", "peakgate-config")
    volumes = {v["name"]: v for v in workload["spec"]["template"]["spec"]["volumes"]}
    (container,) = _containers(workload)
    return [f"{m['mountPath']}/{CONFIG_KEY}" for m in container["volumeMounts"]
            if volumes[m["name"]].get("configMap", {}).get("name") == config_map["metadata"]["name"]]


def test_both_processes_read_the_mounted_config(docs: list[Doc]) -> None:
    for name in ("peakgate-gateway", "peakgate-worker", "peakgate-worker-warm"):
        workload = _one(docs, "Deployment", name)
        paths = list(_config_paths(workload))
        assert paths, f"{name} is not given the config"
        assert set(paths) <= set(_mounted_config_paths(workload, docs))
    images = {_containers(d)[0]["image"] for d in docs if d["kind"] == "Deployment"}
    assert len(images) == 1, "gateway, workers and autoscaler run the same image"


def _prestop_sleep_s(container: Doc) -> float:
    command = container["lifecycle"]["preStop"]["exec"]["command"]
    assert command[0] == "sleep"
    return float(command[1])


def test_gateway_shutdown_fits_its_grace_period(docs: list[Doc]) -> None:
    gateway = _one(docs, "Deployment", "peakgate-gateway")
    (container,) = _containers(gateway)
    grace = gateway["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert grace > _prestop_sleep_s(container) + _settings(docs).shutdown_grace_s
    assert gateway["spec"]["replicas"] == 2
    assert container["resources"]["requests"] and container["resources"]["limits"]["memory"]
    startup = container["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 120, "model warm-up must fit the startup probe"


def test_worker_drains_and_leaves_its_count_to_the_autoscaler(docs: list[Doc]) -> None:
    worker = _one(docs, "Deployment", "peakgate-worker")
    (container,) = _containers(worker)
    assert "replicas" not in worker["spec"], "a replicas field would undo the autoscaler on every apply"
    # The worker drains for shutdown_grace_s after SIGTERM; the kubelet must not kill it first.
    assert worker["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] >= _settings(docs).shutdown_grace_s + 10
    args = container["args"]
    assert args[:2] == ["peakgate", "worker"]
    if "--redis" in args:
        assert args[args.index("--redis") + 1] == _queue_table(docs)["redis_url"]
    assert container["resources"]["requests"]["cpu"]


def _probe_command(docs: list[Doc], deployment: str = "peakgate-worker") -> list[str]:
    (container,) = _containers(_one(docs, "Deployment", deployment))
    command = list(container["readinessProbe"]["exec"]["command"])
    assert command[:2] == ["python", "-c"] and len(command) == 4
    return command


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server not found (scripts/dev-setup installs it)")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--dir", str(tmp_path)]
    server = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = redis.Redis(port=port, socket_timeout=0.2, socket_connect_timeout=0.2)
        deadline = time.monotonic() + 5
        while True:
            with contextlib.suppress(redis.RedisError):
                if client.ping():
                    break
            assert server.poll() is None and time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.02)
        client.close()
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait(timeout=5)


def test_worker_readiness_probe_reads_this_pods_heartbeat(docs: list[Doc], redis_url: str, tmp_path: Path) -> None:
    """The probe, run as the kubelet runs it, against the worker's own key layout and heartbeat encoding."""
    cluster = pytest.importorskip("peakgate.scaleout.cluster")
    keys = pytest.importorskip("peakgate.scaleout.keys")
    command = _probe_command(docs)
    assert command[3] in set(_mounted_config_paths(_one(docs, "Deployment", "peakgate-worker"), docs))
    queue = _queue_table(docs)
    config = tmp_path / CONFIG_KEY
    config.write_text(_config_text(docs).replace(queue["redis_url"], redis_url), encoding="utf-8")
    prefix = keys.Keys(queue["stream_prefix"])
    client = redis.Redis.from_url(redis_url)

    def beat(host: str, *, ready: bool) -> None:
        worker_id = f"{host}-{os.getpid()}-{uuid.uuid4().hex[:4]}"  # as peakgate.scaleout.process names workers
        heartbeat = cluster.Heartbeat(worker=worker_id, pid=os.getpid(), ready=ready, draining=not ready,
                                      models={}, held=0, hold_limit=1, counts=cluster.Counts(), at_wall_s=time.time())
        client.set(prefix.heartbeat(worker_id), cluster.encode_beat(heartbeat), px=10_000)

    def probe() -> int:
        return subprocess.run([sys.executable, *command[1:3], str(config)], timeout=30, check=False).returncode

    try:
        assert probe() == 1, "no heartbeat yet: not ready"
        beat(socket.gethostname() + "-other", ready=True)  # another pod whose name starts with this one's
        beat("elsewhere", ready=True)
        assert probe() == 1
        beat(socket.gethostname(), ready=False)  # warming up, or draining
        assert probe() == 1
        beat(socket.gethostname(), ready=True)
        assert probe() == 0
    finally:
        client.close()


def test_scaled_object_watches_every_queue_stream_of_the_workers(docs: list[Doc]) -> None:
    scaled = _one(docs, "ScaledObject", "peakgate-worker")
    target = scaled["spec"]["scaleTargetRef"]
    worker = _one(docs, target.get("kind", "Deployment"), target["name"])
    assert worker["metadata"]["name"] == "peakgate-worker" and target.get("apiVersion", "apps/v1") == "apps/v1"
    queue = _queue_table(docs)
    expected = {f"{queue['stream_prefix']}:q:{m.name}:{c}" for m in _settings(docs).models for c in PRIORITY_ORDER}
    triggers = scaled["spec"]["triggers"]
    assert {t["type"] for t in triggers} == {"redis-streams"}
    assert sorted(t["metadata"]["stream"] for t in triggers) == sorted(expected)
    redis = _one(docs, "Service", "redis")
    database = urlsplit(queue["redis_url"]).path.strip("/") or "0"
    for trigger in triggers:
        meta = trigger["metadata"]
        assert meta["consumerGroup"] == queue["group"]
        # With a consumer group, lagCount selects the lag metric and pendingEntriesCount would be ignored.
        assert int(meta["lagCount"]) > 0 and "pendingEntriesCount" not in meta and "streamLength" not in meta
        host, port = meta["address"].rsplit(":", 1)
        assert host.split(".")[:2] == [redis["metadata"]["name"], redis["metadata"]["namespace"]]
        assert int(port) == redis["spec"]["ports"][0]["port"]
        assert meta["databaseIndex"] == database
    assert 1 <= scaled["spec"]["minReplicaCount"] <= scaled["spec"]["maxReplicaCount"]


def test_hpa_scales_the_workers_on_a_resource_they_request(docs: list[Doc]) -> None:
    hpa = _one(docs, "HorizontalPodAutoscaler", "peakgate-worker")
    target = hpa["spec"]["scaleTargetRef"]
    worker = _one(docs, target["kind"], target["name"])
    requested = set(_containers(worker)[0]["resources"]["requests"])
    for metric in hpa["spec"]["metrics"]:
        assert metric["type"] == "Resource" and metric["resource"]["name"] in requested
    assert 1 <= hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"]


def test_redis_keeps_its_streams(docs: list[Doc]) -> None:
    redis = _one(docs, "StatefulSet", "redis")
    assert redis["spec"]["serviceName"] == _one(docs, "Service", "redis")["metadata"]["name"]
    (container,) = _containers(redis)
    args = " ".join(container["args"])
    assert "--appendonly yes" in args and "--maxmemory-policy noeviction" in args
    major = re.match(r"redis:(\d+)", container["image"])
    assert major and int(major.group(1)) >= 7, "KEDA's lagCount reads XINFO GROUPS lag: Redis 7+"
    data_dir = container["args"][container["args"].index("--dir") + 1]
    claims = {c["metadata"]["name"] for c in redis["spec"]["volumeClaimTemplates"]}
    assert any(m["mountPath"] == data_dir and m["name"] in claims for m in container["volumeMounts"])


# --- image and docs --------------------------------------------------------------------------------------------

def test_dockerfile_builds_the_image_the_pods_expect(docs: list[Doc]) -> None:
    lines = [line.strip() for line in (DEPLOY / "Dockerfile").read_text(encoding="utf-8").splitlines()]
    text = "\n".join(lines)
    assert re.search(r"^FROM python:3\.11-slim", text, flags=re.M)
    assert re.search(r"apt-get install -y --no-install-recommends apertium apertium-eng-spa", text)
    assert re.search(r"^RUN pip install \.( |$)", text, flags=re.M)
    assert "COPY models ./models" in text and "WORKDIR /app" in text
    (user,) = [shlex.split(line)[1] for line in lines if line.startswith("USER ")]
    uid = int(user.split(":")[0])
    assert uid != 0
    for name in ("peakgate-gateway", "peakgate-worker", "peakgate-worker-warm", "peakgate-autoscaler"):
        security = _one(docs, "Deployment", name)["spec"]["template"]["spec"]["securityContext"]
        assert security["runAsNonRoot"] and security["runAsUser"] == uid


def test_readme_documents_scaling_out() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme.index("## Scaling out") < readme.index("## The request path")
    section = readme[readme.index("## Scaling out"):readme.index("## The request path")]
    for needed in ("peakgate worker --redis redis://127.0.0.1:6379/0", "peakgate serve --config",
                   "kubectl apply -k deploy/", "deploy/hpa", "deploy/README.md"):
        assert needed in section
    assert (DEPLOY / "README.md").is_file()
