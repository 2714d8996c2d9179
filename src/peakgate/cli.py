"""`peakgate` command line: serve, models list|build, translate, tm import|export, worker, route, autoscale,
simulate, rules, surge, checklist, drill, soak."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import logging
import sys
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO, TextIO

from peakgate.config import PRIORITY_ORDER, PriorityClass, Settings, load_settings
from peakgate.domain import Principal, TranslateRequest
from peakgate.errors import BadRequest, ConfigError, PeakgateError
from peakgate.service import Service

_log = logging.getLogger(__name__)
_REPO = Path(__file__).resolve().parents[2]
_CLI_PRINCIPAL = "cli"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="peakgate", description="Translation serving that stays fast through peaks.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve the HTTP API (native, DeepL- and LibreTranslate-compatible)")
    serve.add_argument("--host", help="bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default 8080)")
    _config_arg(serve)
    models = sub.add_parser("models", help="list or build models").add_subparsers(dest="models_command", required=True)
    _config_arg(models.add_parser("list", help="one line per model: NAME ENGINE SRC-TGT PRECISION PATH"))
    _build_args(models.add_parser("build", help="distil the Apertium teacher into a CTranslate2 student"))
    translate = sub.add_parser("translate", help="translate stdin lines to stdout lines, in order")
    which = translate.add_mutually_exclusive_group()
    which.add_argument("--model", help="model name (see `peakgate models list`)")
    which.add_argument("--tier", help="tier name (tiny, medium, large) or hint (fast, balanced, quality)")
    translate.add_argument("-s", "--source", default="auto", help="source language, or auto (default)")
    translate.add_argument("-t", "--target", required=True, help="target language")
    translate.add_argument("--priority", choices=PRIORITY_ORDER, default="document",
                           help="request class: sets decoding (beam) and deadline (default document)")
    _config_arg(translate)
    _tm_args(sub.add_parser("tm", help="import or export the translation memory (TMX 1.4)"))
    _worker_args(sub.add_parser("worker", help="run translation work from the shared Redis queue (scale-out)"))
    route = sub.add_parser("route", help="front door: send requests to gateway clusters by region, load and health")
    route.add_argument("--host", help="bind address (default: cluster.host, 127.0.0.1)")
    route.add_argument("--port", type=int, help="port (default: cluster.port, 8090)")
    _config_arg(route)
    autoscale = sub.add_parser("autoscale", help="scale the workers from live signals (and keep a warm pool)")
    autoscale.add_argument("--provider", choices=("local", "kubernetes"),
                           help="where workers come from (default: autoscale.provider, local)")
    _config_arg(autoscale)
    from peakgate.control.simulate_cli import add_arguments as simulate_args

    simulate_args(sub.add_parser("simulate", help="replay a traffic trace through the scaling policies: SLO, cost"))
    rules = sub.add_parser("rules", help="write the Prometheus recording and SLO alerting rules for the config")
    rules.add_argument("--out", type=Path, default=Path("deploy/prometheus"), help="directory (default: %(default)s)")
    _config_arg(rules)
    from peakgate.drills.surge_cli import add_arguments as surge_args

    surge_args(sub.add_parser("surge", help="open-loop surge against a running deployment, then a report"))
    from peakgate.drills.checklist import add_arguments as checklist_args

    checklist_args(sub.add_parser("checklist", help="the pre-holiday list, checked against artefacts: pass/fail"))
    from peakgate.drills.drill_cli import add_arguments as drill_args

    drill_args(sub.add_parser("drill", help="a surge with faults injected (kill, stall a pipeline): promises, record"))
    from peakgate.drills.soak_cli import add_arguments as soak_args

    soak_args(sub.add_parser("soak", help="steady load for a while: RSS, fds, engine memory, growth slope, verdict"))
    return parser


def _worker_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--redis", help="Redis URL (default: queue.redis_url in the config)")
    parser.add_argument("--models", nargs="+", help="models to serve (default: every configured model)")
    parser.add_argument("--concurrency", type=int, help="batches each model runs side by side (default: per engine)")
    parser.add_argument("--standby", action="store_true",
                        help="warm pool: load the models, take no work until the autoscaler promotes this worker")
    parser.add_argument("--metrics-port", type=int,
                        help="serve /metrics for Prometheus on this port, 0 for a free one (default: "
                        "queue.worker_metrics_port; none)")
    _config_arg(parser)


def _tm_args(parser: argparse.ArgumentParser) -> None:
    tm = parser.add_subparsers(dest="tm_command", required=True)
    load = tm.add_parser("import", help="stream a TMX file into the TM the server uses (all or nothing)")
    load.add_argument("file", type=Path, help="TMX 1.4 (or 1.1) file")
    load.add_argument("--tenant", default="", help="owner tenant (default: shared by every tenant)")
    _config_arg(load)
    dump = tm.add_parser("export", help="write the TM as TMX 1.4")
    dump.add_argument("--out", type=Path, help="output file (default: stdout)")
    dump.add_argument("--tenant", help="only this tenant's entries ('' for the shared ones)")
    dump.add_argument("-s", "--source", help="only this source language")
    dump.add_argument("-t", "--target", help="only this target language")
    _config_arg(dump)


def _config_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, help="TOML or JSON config file (default: the embedded default)")


def _build_args(parser: argparse.ArgumentParser) -> None:
    shared = _REPO.parent / "shared" / "data"
    parser.add_argument("--locale-dir", type=Path, default=Path("/usr/share/locale"), help="gettext catalogs")
    parser.add_argument("--heldout", type=Path, default=shared / "heldout-catalogs.txt",
                        help="catalogs never trained on (evaluation data)")
    parser.add_argument("--dev", type=Path, default=shared / "dev.en-es.tsv", help="dev set (catalog, en, es)")
    parser.add_argument("--recipe", default="student-en-es", help="student-en-es (default) or student-en-es-large")
    parser.add_argument("--build-dir", type=Path, help="intermediate files and the training checkpoint "
                        "(default build/models, or build/RECIPE for another recipe)")
    parser.add_argument("--models-dir", type=Path, default=_REPO / "models", help="where converted models go")
    parser.add_argument("--lists-dir", type=Path, default=Path("/var/lib/apt/lists"),
                        help="apt's Translation-en/-es indexes (recipes that train on package descriptions)")
    parser.add_argument("--minutes", type=float,
                        help="training budget in minutes, over every resume together (default: the recipe's)")
    parser.add_argument("--convert-only", action="store_true",
                        help="skip gathering and training: reconvert the trained model in --build-dir")


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "serve":
            return _serve(args)
        if args.command == "models":
            return _models(args)
        if args.command == "tm":
            return _tm(args)
        if args.command == "route":
            from peakgate.cluster.app import run_router

            return run_router(args.config, args.host, args.port)
        if args.command == "rules":
            from peakgate.observe.rules import write_rules

            print(*write_rules(load_settings(args.config).slo, args.out), sep="\n")
            return 0
        if args.command == "surge":
            from peakgate.drills.surge_cli import run as run_surge

            return run_surge(args)
        if args.command == "checklist":
            from peakgate.drills.checklist import run as run_checklist

            return run_checklist(args)
        if args.command in ("drill", "soak"):
            from peakgate.drills import drill_cli, soak_cli

            return (drill_cli.run if args.command == "drill" else soak_cli.run)(args)
        if args.command == "simulate":
            from peakgate.control.simulate_cli import run as run_simulate

            return run_simulate(args)
        if args.command == "autoscale":
            from peakgate.control.autoscale_cli import run_autoscale

            return run_autoscale(args.config, args.provider)
        if args.command == "worker":
            from peakgate.scaleout.process import run_worker

            return run_worker(args.config, args.redis, args.models, args.concurrency, args.standby,
                              metrics_port=args.metrics_port)
        return asyncio.run(_translate(args, sys.stdin.buffer, sys.stdout))
    except PeakgateError as exc:
        print(f"peakgate: error: {exc.message}", file=sys.stderr)
        return 2 if isinstance(exc, BadRequest | ConfigError) else 1


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from peakgate.api.app import create_app

    settings = load_settings(args.config, host=args.host, port=args.port)
    service = Service(settings)
    # On SIGTERM, open requests get the first half of the grace period and closing (running jobs back to the
    # queue, engines down) what is left, so the process is gone within it whatever hangs.
    drain_s = int(settings.shutdown_grace_s // 2)  # uvicorn takes whole seconds

    @contextlib.asynccontextmanager
    async def lifespan(_app: object) -> AsyncIterator[None]:
        await service.start()
        # What start-up built (models, tables, the app) lives as long as the process: out of the collector's
        # sight, a full collection no longer walks it (bench.overload: gen-2 pauses of up to 80 ms on the loop).
        gc.collect()
        gc.freeze()
        try:
            yield
        finally:
            await _close_within(service, settings.shutdown_grace_s - drain_s)

    app = create_app(service, lifespan=lifespan)
    uvicorn.run(app, host=settings.host, port=settings.port, loop="uvloop", http="httptools",
                log_level=settings.log_level, lifespan="on", access_log=settings.access_log,
                timeout_graceful_shutdown=drain_s)
    return 0


async def _close_within(service: Service, seconds: float) -> None:
    try:
        async with asyncio.timeout(seconds):
            await service.close()
    except TimeoutError:
        # Jobs not yet handed back stay 'translating' in their store: the next start resumes them.
        _log.error("shutdown grace period over: exiting before the service finished closing")


def _models(args: argparse.Namespace) -> int:
    if args.models_command == "list":
        from peakgate.models.registry import ModelRegistry

        print(ModelRegistry(load_settings(args.config)).format_listing())
        return 0
    import dataclasses

    from peakgate.models import build, convert
    from peakgate.models.checkpoint import TrainingInterrupted
    from peakgate.models.train import RECIPES

    if args.recipe not in RECIPES:
        raise BadRequest(f"unknown recipe {args.recipe!r}; known recipes: {', '.join(RECIPES)}")
    recipe = RECIPES[args.recipe]
    if args.minutes is not None:
        recipe = dataclasses.replace(recipe, train_minutes=args.minutes)
    default_dir = "models" if args.recipe == "student-en-es" else args.recipe
    build_dir = args.build_dir or _REPO / "build" / default_dir
    paths = build.BuildPaths(args.locale_dir, args.heldout, args.dev, build_dir, args.models_dir, args.recipe,
                             args.lists_dir)
    if args.convert_only:
        for path in convert.convert(build_dir / "hf", args.models_dir, paths.name).values():
            print(path)
        return 0
    try:
        build.build(paths, recipe)
    except TrainingInterrupted as exc:
        print(f"peakgate: {exc}", file=sys.stderr)
        return 75  # EX_TEMPFAIL: nothing is wrong, run the same command again to go on
    return 0


def _tm(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from peakgate.memory import build_memory
    from peakgate.redaction.policy import build_redactors

    settings = load_settings(args.config)
    path = settings.store_path(settings.tm.path, "tm.sqlite3")
    assert path is not None  # load_settings always sets data_dir
    memory = build_memory(settings.tm, path)
    try:
        if args.tm_command == "export":
            out = args.out if args.out is not None else sys.stdout
            count = memory.export_tmx(out, tenant=args.tenant, source_lang=args.source, target_lang=args.target)
            print(f"exported {count} entries from {path}", file=sys.stderr)
            return 0
        redactor = build_redactors(settings.redaction).redactor_for(args.tenant)
        with tqdm(total=args.file.stat().st_size if args.file.exists() else None, unit="B", unit_scale=True,
                  desc=f"import {args.file.name}", file=sys.stderr) as bar:
            report = memory.import_tmx(args.file, tenant=args.tenant,
                                       progress=lambda p: bar.update(p.bytes_read - bar.n),
                                       transform=(lambda t: redactor.redact(t).text) if redactor.enabled else None)
        added = report.added
        skipped = ", ".join(f"{reason}: {n}" for reason, n in sorted(report.skipped.items())) or "none"
        print(f"{report.tus} translation units: {added.inserted} added, {added.updated} updated, "
              f"{added.kept} kept (human entries win); skipped {skipped}; into {path}", file=sys.stderr)
        return 0
    finally:
        memory.close()


def restrict(settings: Settings, model: str | None, tier: str | None) -> Settings:
    """Only the models a CLI run can use, so it starts (and warms) nothing else."""
    if model is not None:
        config = settings.model(model)
        if config is None:
            known = ", ".join(m.name for m in settings.models)
            raise BadRequest(f"unknown model {model!r}; known models: {known}")
        return settings.model_copy(update={"models": (config,), "tiers": {}, "default_tier": "explicit"})
    name = tier or settings.default_tier
    tiers = dict(settings.tiers)
    if name not in tiers:
        return settings  # a hint ("fast") or an implicit chain: the router resolves it over every model
    chain = tiers[name]
    models = tuple(m for m in settings.models if m.name in chain)
    return settings.model_copy(update={"models": models, "tiers": {name: chain}, "default_tier": name})


def _lines(stream: BinaryIO) -> Iterator[str]:
    for number, raw in enumerate(stream, start=1):
        try:
            yield raw.decode("utf-8").rstrip("\r\n")
        except UnicodeDecodeError as exc:
            raise BadRequest(f"input line {number} is not valid UTF-8 (byte {exc.start})") from exc


def _chunks(lines: Iterator[str], size: int) -> Iterator[list[str]]:
    chunk: list[str] = []
    for line in lines:
        chunk.append(line)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


async def _translate(args: argparse.Namespace, stdin: BinaryIO, stdout: TextIO) -> int:
    settings = restrict(load_settings(args.config), args.model, args.tier)
    priority: PriorityClass = args.priority
    principal = Principal(key=None, tenant=_CLI_PRINCIPAL, priority=priority)
    # A local CLI run never serves HTTP: the open-dev-mode warning meant for servers would only be noise.
    logging.getLogger("peakgate.admission.keys").setLevel(logging.ERROR)
    service = Service(settings)
    await service.start()
    try:
        for chunk in _chunks(_lines(stdin), settings.limits.max_segments):
            request = TranslateRequest(tuple(chunk), args.source, args.target, tier=args.tier, model=args.model)
            result = await service.run(request, principal, priority)
            # One output line per input line, whatever an engine emits.
            stdout.writelines(t.text.replace("\n", " ") + "\n" for t in result.translations)
            stdout.flush()
    finally:
        await service.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
