"""`trainwatch check`: one pass over finished or running logs, a report, and a monitoring exit code."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainwatch import runner
from trainwatch.engine import Engine
from trainwatch.errors import SourceError
from trainwatch.session import LogClock, Session
from trainwatch.sinks import report
from trainwatch.sources import same_run
from trainwatch.sources.files import discover


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("check", help="analyse logs once and report findings",
                       description="Read logs once, report the run and every finding, exit 0/1/2/3.")
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="log files, globs or directories; user@host:PATH or ssh://user@host:port/PATH "
                        "on another machine")
    add_engine_options(p)
    p.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    p.add_argument("-j", "--jobs", type=jobs_count, default=default_jobs(), metavar="N",
                   help="judge up to N runs at once, one process each (default: the CPUs this process may "
                        "use; 1 judges in this process)")
    p.set_defaults(run=run)


def default_jobs() -> int:
    import os

    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def jobs_count(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--jobs must be a whole number, not {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError("--jobs must be at least 1")
    return n


def add_engine_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", dest="fmt", type=format_name, metavar="NAME",
                   help="force a format (see 'trainwatch formats'; default: detected per file)")
    p.add_argument("--preset", metavar="NAME",
                   help="sft, grpo, ebft, pretrain or vision (default: chosen from the task the logs show)")
    p.add_argument("--config", action="append", metavar="FILE", help="YAML overrides (repeatable)")


def format_name(text: str) -> str:
    """--format is checked as it is parsed: an unknown name is a usage error before any file is read
    (`tail` would otherwise wait for ever on a file it can never follow)."""
    from trainwatch import adapters
    from trainwatch.errors import UsageError

    try:
        adapters.get(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def open_all(paths: list[str], fmt: str | None) -> tuple[list[runner.OpenSource], list[str]]:
    files = discover(paths)
    explicit = {str(Path(p)) for p in paths}
    opened, skipped = [], []
    for path in files:
        try:
            opened.append(runner.open_source(path, fmt))
        except SourceError as exc:
            if str(path) in explicit or len(files) == 1:
                raise
            skipped.append(str(exc))
    if not opened:
        raise SourceError(f"{', '.join(paths)}: no readable log in a known format")
    return _one_view_per_run(opened, explicit, skipped), skipped


def _one_view_per_run(opened: list[runner.OpenSource], explicit: set[str],
                      skipped: list[str]) -> list[runner.OpenSource]:
    """A trainer_state.json beside a console log of the same run (it printed the state's first losses)
    would repeat every finding: the console log is read, the state is not. One of another run in the
    same folder is read as its own run."""
    consoles = [s for s in opened if s.format == "hf_console"]
    out = []
    for s in opened:
        if s.format == "trainer_state" and str(s.path) not in explicit:
            twin = next((c for c in consoles if same_run.beside(s.path, c.path)
                         and same_run.same_run(s.path, c.path)), None)
            if twin is not None:
                skipped.append(f"{s.path}: same run as {twin.path} (that log printed its losses); read once")
                continue
        out.append(s)
    return out


def runs_of(opened: list[runner.OpenSource]) -> list[list[runner.OpenSource]]:
    """The runs among the sources, each judged on its own: see trainwatch/sources/same_run.py."""
    return [[opened[i] for i in group] for group in same_run.runs(opened)]


def _drop_unread(opened: list[runner.OpenSource], infos: list[report.SourceInfo], explicit: set[str],
                 skipped: list[str], alone: bool) -> list[report.SourceInfo]:
    """Sources that yielded nothing at all (no metric, no error, no event) were not understood, and
    calling them healthy would be a guess: a file named on the command line, or the only one (`alone`),
    is an error (exit 3); others become notes."""
    kept = []
    for src, info in zip(opened, infos):
        if info.records == 0:
            err = runner.unrecognised(src.path) if src.fallback else SourceError(
                f"{src.path}: read as {src.format}, but nothing in it was understood (no metrics, no errors)",
                hint="force another format with --format NAME (see 'trainwatch formats')")
            if str(src.path) in explicit or alone:
                raise err
            skipped.append(str(err))
            continue
        kept.append(info)
    return kept


@dataclass
class Judged:
    """One run as `check` judged it: its engine (read, never fed again), its JSON document, and the
    local file each source name was read from (a remote copy's name maps to its temporary copy)."""

    engine: Engine
    doc: dict[str, Any]
    files: dict[str, Path]


def run(args: argparse.Namespace) -> int:
    return with_local_paths(args.paths, lambda paths, names: _check(args, paths, names))


def with_local_paths(raw_paths: list[str], then: Callable[[list[str], dict[str, str]], int]) -> int:
    """`then(paths, names)` over local files: remote ones are copied first, into a folder that lives while
    `then` runs, and `names` gives each copy its remote name."""
    from trainwatch.sources import remote

    if not any(remote.looks_remote(p) for p in raw_paths):
        return then(raw_paths, {})
    import tempfile

    rps = [remote.parse(p) if remote.looks_remote(p) else None for p in raw_paths]  # all checked before any ssh
    with tempfile.TemporaryDirectory(prefix="trainwatch-remote-") as tmp:
        paths, names = [], {}
        for i, (raw, rp) in enumerate(zip(raw_paths, rps)):
            if rp is None:
                paths.append(raw)
                continue
            for name, local in remote.fetch(rp, Path(tmp) / str(i)):  # copies read once, named as there
                paths.append(str(local))
                names[str(local)] = name
        return then(paths, names)


def judge(paths: list[str], names: dict[str, str], fmt: str | None, preset: str | None,
          configs: list[str] | None, after: Callable[[Engine], None] | None = None) -> tuple[list[Judged], list[str]]:
    """Every run among the local files judged as `check` judges it, each with its own task, preset and
    engine (no log judged by its neighbours); the notes on files skipped. `after(engine)` feeds what only
    the caller knows (`run`: the child's end) once a run's files are read. Raises SourceError when no file
    yields a run."""
    opened, skipped, local_of = _opened(paths, names, fmt)
    return _judge_runs(paths, opened, skipped, local_of, runs_of(opened), preset, configs, after)


def _judge_runs(paths: list[str], opened: list[runner.OpenSource], skipped: list[str], local_of: dict[str, Path],
                runs: list[list[runner.OpenSource]], preset: str | None, configs: list[str] | None,
                after: Callable[[Engine], None] | None = None) -> tuple[list[Judged], list[str]]:
    """`judge` over sources already opened and grouped into runs, in this process."""
    explicit = {str(Path(p)) for p in paths}
    judged = []
    for run in runs:
        one = _judge_run(run, preset, configs, explicit, skipped, len(opened) == 1, after)
        if one is not None:
            engine, doc = one
            judged.append(Judged(engine, doc, {src.name: local_of.get(src.name, src.path) for src in run}))
    if not judged:
        raise SourceError("no readable log in a known format among the files given")
    return judged, skipped


def _opened(paths: list[str], names: dict[str, str],
            fmt: str | None) -> tuple[list[runner.OpenSource], list[str], dict[str, Path]]:
    """The sources opened, local copies of remote files under their remote names; the notes on files
    skipped; the local file of each source name."""
    from trainwatch.sources import remote

    try:
        opened, skipped = open_all(paths, fmt)
    except SourceError as exc:
        if not names:
            raise
        message, hint = exc.message, exc.hint
        for local, name in names.items():  # a copy's error names the remote file
            message = message.replace(local, name)
        raise SourceError(message, hint=hint) from None
    local_of = {names.get(str(s.path), s.name): s.path for s in opened}
    opened = [remote.renamed(s, names[str(s.path)]) if str(s.path) in names else s for s in opened]
    return opened, skipped, local_of


def _judge_run(run: list[runner.OpenSource], preset: str | None, configs: list[str] | None, explicit: set[str],
               skipped: list[str], alone: bool,
               after: Callable[[Engine], None] | None = None) -> tuple[Engine, dict[str, Any]] | None:
    """One run read by its own session: its engine and JSON document, or None when nothing in it was
    understood (noted in `skipped`, or raised for a file named on the command line)."""
    import time

    session = Session(run, preset=preset, configs=configs, clock=LogClock(time.time()))
    engine = session.engine
    infos = [session.read_file(src) for src in run]
    infos = _drop_unread(run, infos, explicit, skipped, alone=alone)
    if not infos:
        return None
    if after is not None:
        after(engine)
    return engine, report.document(engine, infos, engine.config.preset, preset_auto=preset is None)


def judge_docs(paths: list[str], names: dict[str, str], fmt: str | None, preset: str | None,
               configs: list[str] | None, jobs: int) -> tuple[list[dict[str, Any]], list[str]]:
    """The JSON documents of `judge`, with the runs judged by up to `jobs` processes at once: runs share
    nothing, so a folder of many logs takes the time of its share per core. Each worker opens its run's
    files again (a detection is cheap beside a judgement); documents and notes come back in run order,
    as one process gives them."""
    if jobs <= 1:
        judged, skipped = judge(paths, names, fmt, preset, configs)
        return [j.doc for j in judged], skipped
    opened, skipped, local_of = _opened(paths, names, fmt)
    runs = runs_of(opened)
    if len(runs) == 1:  # nothing to share out: judged here, with the sources already opened
        judged, skipped = _judge_runs(paths, opened, skipped, local_of, runs, preset, configs)
        return [j.doc for j in judged], skipped
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    explicit = sorted(str(Path(p)) for p in paths)
    alone = len(opened) == 1
    work = [([str(local_of.get(s.name, s.path)) for s in run], fmt, preset, configs, names, explicit, alone)
            for run in runs]
    docs: list[dict[str, Any]] = []
    # fork: the workers start with trainwatch already imported (check starts no thread before this)
    with ProcessPoolExecutor(max_workers=min(jobs, len(runs)), mp_context=multiprocessing.get_context("fork")) as ex:
        for doc, notes, error in ex.map(_doc_of_run, work):
            skipped.extend(notes)
            if error is not None:
                raise SourceError(error[0], hint=error[1])
            if doc is not None:
                docs.append(doc)
    if not docs:
        raise SourceError("no readable log in a known format among the files given")
    return docs, skipped


def _doc_of_run(work: tuple[list[str], str | None, str | None, list[str] | None, dict[str, str], list[str], bool]
                ) -> tuple[dict[str, Any] | None, list[str], tuple[str, str] | None]:
    """A worker of `judge_docs`: (document or None, notes on what it skipped, the error it met)."""
    from trainwatch.sources import remote

    paths, fmt, preset, configs, names, explicit, alone = work
    notes: list[str] = []
    try:
        run = [runner.open_source(Path(p), fmt) for p in paths]
        run = [remote.renamed(s, names[str(s.path)]) if str(s.path) in names else s for s in run]
        one = _judge_run(run, preset, configs, set(explicit), notes, alone)
    except SourceError as exc:
        return None, notes, (exc.message, exc.hint)
    return (one[1] if one is not None else None), notes, None


def _check(args: argparse.Namespace, paths: list[str], names: dict[str, str]) -> int:
    """The check over local files; `names` gives local copies of remote files their remote names."""
    docs, skipped = judge_docs(paths, names, args.fmt, args.preset, args.config, args.jobs)
    doc = report.combine(docs)
    if skipped:
        doc["sources"][0]["skipped"].extend(skipped)
    if args.json:
        report.write_json(doc, sys.stdout)
    else:
        report.write_text(doc, sys.stdout)
    return int(doc["exit_code"])
