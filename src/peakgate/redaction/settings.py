"""Redaction settings for one tenant; `policy.RedactionPolicy` holds the default and per-tenant overrides."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

PiiKind = Literal["email", "url", "iban", "card", "phone", "id"]
ALL_KINDS: tuple[PiiKind, ...] = ("email", "url", "iban", "card", "phone", "id")


class RedactionConfig(BaseModel):
    """Whether a tenant's text is de-identified before caching/TM/engines, and which kinds count as PII."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = False
    kinds: tuple[PiiKind, ...] = ALL_KINDS
