"""A request's preferred cluster (region header, else the client's address, else the default) and its tenant.

Header values arrive as raw bytes. Clients send a non-ASCII region such as `华东` as UTF-8, as GB18030 (older
Windows clients), percent-encoded, or in the RFC 8187 form `UTF-8''%E5%8D%8E%E4%B8%9C`; every reading that
decodes is tried against the known tags, so no guess about the charset can pick a wrong cluster. A value that
names no cluster is ignored (the address or the default decides), as a misspelt hint should not fail a request.
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal
from urllib.parse import parse_qsl, unquote_to_bytes

from peakgate.cluster.config import ClusterConfig, region_key

_CHARSETS = ("utf-8", "gb18030", "latin-1")  # latin-1 last: it decodes anything
_RFC8187_PREFIX = b"utf-8''"
_KEY_PARAMS = ("api_key", "auth_key")  # LibreTranslate's and DeepL's legacy key fields, when in the query

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True, slots=True)
class Preference:
    cluster: str
    by: Literal["header", "address", "default"]


class Selector:
    """Built once from the config: region tags and address ranges to cluster names."""

    def __init__(self, config: ClusterConfig) -> None:
        self._header = config.region_header.lower().encode("ascii")
        self._default = config.default_cluster
        self._tags = {region_key(tag): spec.name for spec in config.clusters for tag in (spec.name, *spec.regions)}
        # Most specific range first: a /24 carved out of another cluster's /16 wins.
        ranges: list[tuple[Network, str]] = [(net, spec.name) for spec in config.clusters for net in spec.ip_ranges]
        self._ranges = sorted(ranges, key=lambda pair: -pair[0].prefixlen)

    def prefer(self, headers: Iterable[tuple[bytes, bytes]], client_host: str | None) -> Preference:
        for name, value in headers:
            if name.lower() == self._header:
                cluster = self.region(value)
                if cluster is not None:
                    return Preference(cluster, "header")
        address = _address(client_host)
        if address is not None:
            for network, cluster in self._ranges:
                if address.version == network.version and address in network:
                    return Preference(cluster, "address")
        return Preference(self._default, "default")

    def region(self, raw: bytes) -> str | None:
        """The cluster a region-header value names, however the client encoded it; None if none."""
        return next((self._tags[key] for key in _readings(raw) if key in self._tags), None)


def _readings(raw: bytes) -> Iterator[str]:
    value = raw.strip()
    if value.lower().startswith(_RFC8187_PREFIX):
        value = value[len(_RFC8187_PREFIX):]
    forms = [value, unquote_to_bytes(value)] if b"%" in value else [value]
    for form in forms:
        for charset in _CHARSETS:
            try:
                yield region_key(form.decode(charset))
            except UnicodeDecodeError:
                continue


def _address(host: str | None) -> Address | None:
    if host is None:
        return None
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None  # a unix socket or a test client's name: no range applies
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def tenant_of(headers: Iterable[tuple[bytes, bytes]], query_string: bytes) -> str | None:
    """A stable, non-reversible id for the API key a request carries (Authorization with any scheme, X-API-Key,
    or an `api_key`/`auth_key` query parameter); None without one. Keys in a body are not looked for: the body
    streams through unread."""
    for name, value in headers:
        lowered = name.lower()
        if lowered == b"authorization":
            _scheme, _, token = value.strip().partition(b" ")
            return _digest(token.strip() or value.strip())
        if lowered == b"x-api-key" and value.strip():
            return _digest(value.strip())
    for param, text in parse_qsl(query_string.decode("latin-1"), encoding="latin-1"):
        if param in _KEY_PARAMS and text:
            return _digest(text.encode("latin-1"))
    return None


def _digest(key: bytes) -> str:
    return hashlib.blake2b(key, digest_size=12).hexdigest()
