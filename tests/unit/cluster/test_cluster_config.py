"""The `[cluster]` section: seed defaults, validation that names what is wrong, loading from a TOML file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cluster_fakes import SHANGHAI, seed
from pydantic import ValidationError

from peakgate.config import load_settings
from peakgate.errors import ConfigError


def test_seed_defaults_and_the_default_spill_order() -> None:
    config = seed()
    assert (config.default_cluster, config.spill_load, config.region_header) == ("beijing", 0.85, "X-Peakgate-Region")
    assert config.spill_order("shanghai") == ("guangzhou", "beijing")
    assert config.clusters[0].upstreams[0].url == SHANGHAI


def cluster(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "upstreams": [{"url": f"http://{name}.test"}], **fields}


@pytest.mark.parametrize(("clusters", "extra", "message"), [
    ([cluster("shanghai")], {}, "default_cluster 'beijing'"),
    ([cluster("beijing"), cluster("beijing")], {}, "unique"),
    ([cluster("beijing", fallbacks=["mars"])], {}, "fallbacks ['mars']"),
    ([cluster("beijing", fallbacks=["beijing"])], {}, "must name other clusters"),
    ([cluster("beijing", regions=["华北"]), cluster("x", regions=["华北"])], {}, "more than one cluster"),
    ([cluster("bei jing")], {"default_cluster": "bei jing"}, "letters, digits"),
    ([{"name": "beijing", "upstreams": [{"url": "bj.test:8080"}]}], {}, "http://"),
    ([{"name": "beijing", "upstreams": []}], {}, "at least 1"),
    ([cluster("beijing", ip_ranges=["10.0.0.1/8"])], {}, "ip_ranges"),
    ([cluster("beijing")], {"spill_load": 1.5}, "spill_load"),
])
def test_invalid_configs_say_what_is_wrong(clusters: list[dict[str, Any]], extra: dict[str, Any],
                                           message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("[", r"\[").replace("]", r"\]")):
        seed(clusters=clusters, **extra)


def test_load_settings_reads_the_cluster_section_and_upstream_urls_lose_trailing_slashes(tmp_path: Path) -> None:
    path = tmp_path / "route.toml"
    path.write_text("""
[cluster]
port = 9000
sticky_tenants = true
[[cluster.clusters]]
name = "beijing"
upstreams = [{ url = "http://127.0.0.1:8080/", max_inflight = 8 }]
""", encoding="utf-8")
    config = load_settings(path).cluster
    assert config is not None
    assert (config.port, config.sticky_tenants, config.clusters[0].upstreams[0].url) == (
        9000, True, "http://127.0.0.1:8080")


def test_a_bad_cluster_section_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "route.json"
    path.write_text('{"cluster": {"clusters": []}}', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"cluster\.clusters"):
        load_settings(path)
