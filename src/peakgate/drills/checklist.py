"""`peakgate checklist`: the pre-holiday list, each item checked against artefacts on disk, printed pass/fail.

    peakgate checklist [--root DIR] [--surge-dir D] [--drills-dir D] [--dashboards-dir D] [--rules-dir D]
                       [--max-age-days N] [--min-multiplier X]

1. a recent surge report at >= 5x: a `peakgate surge` JSON summary whose profile's multiplier is at least
   `min_multiplier`, started within `max_age_days`, whose counts add up and whose refusals all had Retry-After;
2. a drill record: at least one .md or .json file under the drills folder;
3. dashboards: Grafana JSON with panels;
4. alerting rules: Prometheus rule files with at least one `alert:`, and recording rules for them.
Any failure makes the exit status 1: the list is meant for CI and for the on-call's last look.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from peakgate.control.simulate_config import describe_errors
from peakgate.errors import ConfigError

_ALERT = re.compile(r"^\s*-?\s*alert:\s*\S", re.MULTILINE)
_RECORD = re.compile(r"^\s*-?\s*record:\s*\S", re.MULTILINE)


class ChecklistConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    root: Path = Path(".")
    surge_dir: Path = Path("docs/surge")
    drills_dir: Path = Path("docs/drills")
    dashboards_dir: Path = Path("deploy/grafana")
    rules_dir: Path = Path("deploy/prometheus")
    max_age_days: float = Field(default=30.0, gt=0)
    min_multiplier: float = Field(default=5.0, ge=1)


@dataclass(frozen=True, slots=True)
class Item:
    name: str
    passed: bool
    detail: str


def run_checks(config: ChecklistConfig, now: datetime) -> list[Item]:
    return [_surge(config, now), _drills(config), _dashboards(config), _rules(config)]


def _surge(config: ChecklistConfig, now: datetime) -> Item:
    name = f"surge report >= {config.min_multiplier:g}x within {config.max_age_days:g} days"
    folder = config.root / config.surge_dir
    reasons: list[str] = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        summary = _json(path)
        if not isinstance(summary, dict):
            reasons.append(f"{path.name}: not a surge summary")
        elif (why := _surge_problem(summary, config, now)) is not None:
            reasons.append(f"{path.name}: {why}")
        else:
            p = summary["profile"]
            return Item(name, True, f"{path}: {p['name']} at {p['multiplier']:g}x, started {summary['started_at']}")
    if not reasons:
        return Item(name, False, f"no surge summary (*.json) in {folder}: run `peakgate surge --profile "
                    f"holiday-10x --out {config.surge_dir}` against the deployment")
    return Item(name, False, "; ".join(reasons))


def _surge_problem(summary: dict[str, Any], config: ChecklistConfig, now: datetime) -> str | None:
    """Why a summary does not count, or None when it does."""
    try:
        multiplier = float(summary["profile"]["multiplier"])
        started = datetime.fromisoformat(summary["started_at"])
        checks = summary["checks"]
    except (KeyError, TypeError, ValueError):
        return "not a surge summary"
    if started.tzinfo is None:
        started = started.replace(tzinfo=UTC)
    if multiplier < config.min_multiplier:
        return f"only {multiplier:g}x"
    if now - started > timedelta(days=config.max_age_days):
        return f"from {started.date()}, older than {config.max_age_days:g} days"
    if not checks.get("counts_add_up") or not checks.get("all_refusals_had_retry_after"):
        return "its checks failed (counts or Retry-After)"
    return None


def _drills(config: ChecklistConfig) -> Item:
    folder = config.root / config.drills_dir
    if not folder.is_dir():
        return Item("drill record", False, f"{folder} does not exist: run a drill and record it there")
    records = sorted(p for p in folder.iterdir() if p.suffix in (".md", ".json") and p.is_file())
    if not records:
        return Item("drill record", False, f"no drill record (.md or .json) in {folder}")
    return Item("drill record", True, f"{len(records)} in {folder}, e.g. {records[-1].name}")


def _dashboards(config: ChecklistConfig) -> Item:
    folder = config.root / config.dashboards_dir
    found = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        board = _json(path)
        panels = board.get("panels") if isinstance(board, dict) else None
        if isinstance(panels, list) and panels:
            found.append(f"{path.name} ({len(panels)} panels)")
    if not found:
        return Item("dashboards", False, f"no Grafana dashboard with panels in {folder}")
    return Item("dashboards", True, ", ".join(found))


def _rules(config: ChecklistConfig) -> Item:
    folder = config.root / config.rules_dir
    texts = {p.name: p.read_text(encoding="utf-8", errors="replace")
             for p in sorted([*folder.glob("*.yml"), *folder.glob("*.yaml")])} if folder.is_dir() else {}
    alerts = sum(len(_ALERT.findall(t)) for t in texts.values())
    records = sum(len(_RECORD.findall(t)) for t in texts.values())
    if not alerts:
        return Item("alert rules", False, f"no Prometheus alerting rule (`alert:`) in {folder}")
    return Item("alert rules", True, f"{alerts} alerts, {records} recording rules in {', '.join(texts)}")


def _json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = ChecklistConfig()
    parser.add_argument("--root", type=Path, default=defaults.root, help="the folders below are under it (default .)")
    for field in ("surge_dir", "drills_dir", "dashboards_dir", "rules_dir"):
        parser.add_argument(f"--{field.replace('_', '-')}", type=Path, default=getattr(defaults, field),
                            help=f"default {getattr(defaults, field)}")
    parser.add_argument("--max-age-days", type=float, default=defaults.max_age_days,
                        help="how recent the surge report must be (default 30)")
    parser.add_argument("--min-multiplier", type=float, default=defaults.min_multiplier,
                        help="the smallest surge that counts (default 5)")


def run(args: argparse.Namespace, now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> int:
    try:
        config = ChecklistConfig(root=args.root, surge_dir=args.surge_dir, drills_dir=args.drills_dir,
                                 dashboards_dir=args.dashboards_dir, rules_dir=args.rules_dir,
                                 max_age_days=args.max_age_days, min_multiplier=args.min_multiplier)
    except ValidationError as exc:
        raise ConfigError(f"checklist: {describe_errors(exc)}") from exc
    items = run_checks(config, now())
    for item in items:
        print(f"{'PASS' if item.passed else 'FAIL'}  {item.name}: {item.detail}")
    failed = sum(not i.passed for i in items)
    print(f"{len(items) - failed}/{len(items)} passed")
    return 1 if failed else 0
