"""`peakgate autoscale` refuses, with exit code 2 and a reason, what it cannot run: no shared queue, a bad config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from peakgate.cli import main


def _config(tmp_path: Path, **data: object) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"data_dir": str(tmp_path / "var"), **data}))
    return str(path)


def test_without_the_redis_queue_there_is_nothing_to_scale(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                           ) -> None:
    assert main(["autoscale", "--config", _config(tmp_path)]) == 2
    assert 'set [queue] backend = "redis"' in capsys.readouterr().err


@pytest.mark.parametrize(("autoscale", "says"), [
    ({"provider": "nomad"}, "autoscale.provider"),
    ({"policy": {"kind": "threshold", "tick_s": 0}}, "tick_s"),
    ({"clamps": {"min_replicas": 5, "max_replicas": 2}}, "min_replicas (5) is above max_replicas (2)"),
    ({"forecast": {"kind": "tea-leaves"}}, "autoscale.forecast"),
])
def test_a_bad_autoscale_config_is_refused_before_anything_starts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], autoscale: dict[str, object], says: str) -> None:
    path = _config(tmp_path, queue={"backend": "redis"}, autoscale=autoscale)
    assert main(["autoscale", "--config", path]) == 2
    assert says in capsys.readouterr().err


def test_the_kubernetes_provider_without_a_cluster_to_talk_to_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    path = _config(tmp_path, queue={"backend": "redis"}, autoscale={"metrics_port": None})
    assert main(["autoscale", "--provider", "kubernetes", "--config", path]) == 1
    assert "no Kubernetes API to talk to" in capsys.readouterr().err
