"""The preferred cluster from the region header (however encoded), the client's address, or the default; the
tenant id from the API key."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from cluster_fakes import seed

from peakgate.cluster.selector import Preference, Selector, tenant_of

SELECTOR = Selector(seed())
HEADER = b"x-peakgate-region"


@pytest.mark.parametrize("raw", [
    "华东".encode(),  # UTF-8 as sent by most clients
    "华东".encode("gb18030"),  # older Windows clients
    quote("华东").encode(),  # percent-encoded UTF-8
    b"UTF-8''" + quote("华东").encode(),  # RFC 8187
    " 华东 ".encode(),
    b"ShangHai",  # the cluster's own name, any case
])
def test_the_region_header_picks_its_cluster_however_it_is_encoded(raw: bytes) -> None:
    assert SELECTOR.prefer([(HEADER, raw)], "10.2.0.1") == Preference("shanghai", "header")


def test_the_header_name_is_matched_case_insensitively_and_other_regions_map_too() -> None:
    assert SELECTOR.prefer([(b"X-Peakgate-Region", "华南".encode())], None) == Preference("guangzhou", "header")


@pytest.mark.parametrize("raw", [b"", b"mars", "华北".encode(), b"%ff%fe", "华东".encode("utf-16")])
def test_a_value_naming_no_cluster_leaves_the_choice_to_the_address(raw: bytes) -> None:
    assert SELECTOR.prefer([(HEADER, raw)], "10.2.3.4") == Preference("guangzhou", "address")


@pytest.mark.parametrize(("host", "cluster"), [
    ("10.1.2.3", "shanghai"),
    ("10.1.9.7", "guangzhou"),  # the /24 carved out of shanghai's /16 wins
    ("::ffff:10.1.2.3", "shanghai"),  # IPv4-mapped IPv6 (a dual-stack listener)
])
def test_the_client_address_picks_the_most_specific_range(host: str, cluster: str) -> None:
    assert SELECTOR.prefer([], host) == Preference(cluster, "address")


@pytest.mark.parametrize("host", [None, "10.3.0.1", "2001:db8::1", "testclient"])
def test_anything_else_goes_to_the_default_cluster(host: str | None) -> None:
    assert SELECTOR.prefer([(b"x-other", "华东".encode())], host) == Preference("beijing", "default")


def test_the_tenant_is_a_digest_of_the_key_wherever_the_dialect_carries_it() -> None:
    bearer = tenant_of([(b"authorization", b"Bearer k-acme")], b"")
    assert bearer is not None and "k-acme" not in bearer
    assert tenant_of([(b"Authorization", b"DeepL-Auth-Key k-acme")], b"") == bearer
    assert tenant_of([(b"x-api-key", b"k-acme")], b"") == bearer
    assert tenant_of([], b"target_lang=ES&auth_key=k-acme") == bearer
    assert tenant_of([], b"api_key=k%2Dacme") == bearer
    assert tenant_of([(b"authorization", b"Bearer k-other")], b"") != bearer
    assert tenant_of([(b"content-type", b"application/json")], b"q=hello") is None
