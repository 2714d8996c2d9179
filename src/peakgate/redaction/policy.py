"""Per-tenant redaction: one default config plus overrides, resolved to ready-built redactors."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

from peakgate.redaction.redactor import Redactor
from peakgate.redaction.settings import RedactionConfig


class RedactionPolicy(BaseModel):
    """`default` applies to every tenant not named in `tenants` (an override replaces it whole)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    default: RedactionConfig = Field(default_factory=RedactionConfig)
    tenants: Mapping[str, RedactionConfig] = Field(default_factory=dict)

    def config_for(self, tenant: str) -> RedactionConfig:
        return self.tenants.get(tenant, self.default)


class TenantRedactors:
    """Every redactor built once up front (detectors compile regexes); lookups are a dict hit."""

    def __init__(self, policy: RedactionPolicy) -> None:
        self._default = Redactor.from_config(policy.default)
        self._by_tenant = {tenant: Redactor.from_config(cfg) for tenant, cfg in policy.tenants.items()}

    def redactor_for(self, tenant: str) -> Redactor:
        return self._by_tenant.get(tenant, self._default)


def build_redactors(policy: RedactionPolicy) -> TenantRedactors:
    return TenantRedactors(policy)
