"""Shared by `check` and `tail`: sources opened with the right adapter, their task guessed, the config files
found. The session (trainwatch.session) builds the engine from them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from trainwatch import adapters, task
from trainwatch.adapters.pipeline import SourceParser
from trainwatch.errors import SourceError
from trainwatch.sources.files import looks_binary, read_sample, read_sample_start

USER_CONFIG = "trainwatch.yaml"
FALLBACK_FORMAT = "text"  # read when no adapter is confident: error signatures and tracebacks only


@dataclass
class OpenSource:
    path: Path
    name: str  # the label in reports and alerts: the path as the user gave it
    format: str
    head: str  # the detection sample (head, tail and spread pieces of the file), not only its start
    parser: SourceParser
    fallback: bool = False
    """No metric adapter recognised the file: it is read for errors only (and `tail` tries the adapters
    again as the file grows). One that yields no record at all was not understood, and `check` says so
    (exit 3) instead of calling it healthy."""
    unscored: bool = False  # no adapter scored at all, not even `text` for an error in the sample
    head_start: int | None = None
    """How many characters at the start of `head` are the file's own start, unbroken (None: all of it):
    past them the sample skips parts of the file (trainwatch.sources.files.sample_start)."""


def unrecognised(path: Path | str) -> SourceError:
    return SourceError(f"{path}: no known log format recognised",
                       hint="see 'trainwatch formats', or force one with --format NAME")


def open_source(path: Path, fmt: str | None = None, *, head: bytes | None = None) -> OpenSource:
    """Detects the format from a sample of the whole file (or takes `fmt`) and builds its parser.

    A text file that no adapter recognises is still opened, with the `text` adapter, so that the
    errors and tracebacks in it are reported whatever format its metrics are in.
    """
    name = str(path)
    claimed = claimed_format(path, fmt)
    if claimed is not None:
        reader = adapters.get(claimed)(name)
        reader.probe(path)  # type: ignore[attr-defined]
        return OpenSource(path, name, claimed, "", SourceParser(reader))
    raw = read_sample(path) if head is None else head
    start = read_sample_start(path) if head is None else None
    fallback = unscored = False
    if fmt is None:
        if not raw:
            raise SourceError(f"{path}: empty file, nothing to check")
        if looks_binary(raw):
            raise SourceError(f"{path}: binary data, not a text log")
        text = raw.decode("utf-8", "replace")
        if "\x00" in text:
            text = text.replace("\x00", "")  # padding (see looks_binary): the parser drops it too
        fmt = adapters.detect(text, name)
        if fmt is None and FALLBACK_FORMAT not in adapters.registry():
            raise unrecognised(path)
        unscored = fmt is None
        fmt = fmt or FALLBACK_FORMAT
        fallback = fmt == FALLBACK_FORMAT  # errors only, whether chosen for its errors or for want of better
    else:
        text = raw.decode("utf-8", "replace")
    adapter = adapters.get(fmt)(name)
    head_start = None
    if start is not None:
        prefix = raw[:start].decode("utf-8", "replace")  # `start` ends at a line's end: `text` begins with it
        head_start = len(prefix.replace("\x00", "") if "\x00" not in text else prefix)
    return OpenSource(path, name, fmt, text, SourceParser(adapter), fallback, unscored, head_start)


def claimed_format(path: Path, fmt: str | None) -> str | None:
    """The path-reading adapter for `path` (a TensorBoard event file, an MLflow run folder, ...), if any:
    the one forced with --format when it reads paths, else the one that claims the path."""
    from trainwatch.adapters.path_reader import reads_path
    from trainwatch.sources.runfolders import path_format

    if fmt is not None:
        return fmt if reads_path(adapters.get(fmt)) else None
    return path_format(path)


def guess_task(sources: list[OpenSource]) -> task.TaskGuess:
    """The task and the clues behind it, from each source's detection sample."""
    return task.guess(task.SourceSample(s.name, s.format, s.head, s.head_start) for s in sources)


def config_files(explicit: list[str] | None) -> list[Path]:
    """./trainwatch.yaml when present, then the --config files in the order given."""
    files = [Path(USER_CONFIG)] if Path(USER_CONFIG).is_file() else []
    for f in explicit or []:
        p = Path(f)
        if not p.is_file():
            raise SourceError(f"{f}: config file not found")
        files.append(p)
    return files
