"""A session: one watch of one run, whether `check` reads it to the end, `tail` follows it or `demo`
replays it.

The session owns what the three used to set up each in its own way: the sources' detection samples,
the task and preset chosen from them, the config files, the engine, and the clock policy (the log's
own time for `check`, the wall clock for `tail`, simulated time in tests). Records go in through
`feed`, in batches, so every mode judges them the same way. A file read once to its end (`check`) is
read here too, by `read_file`; a followed file or a replay is read by its own source and fed in.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from trainwatch import config, runconfig, task
from trainwatch.adapters.path_reader import reads_path
from trainwatch.adapters.pipeline import BACKLOG_BLOCK
from trainwatch.alerts import AlertChange
from trainwatch.batch import Batch
from trainwatch.engine import Engine
from trainwatch.errors import SourceError
from trainwatch.model import Record
from trainwatch.runner import OpenSource, config_files, guess_task
from trainwatch.sources.files import open_checked

MAX_DOCUMENT = 256 << 20  # a whole_file document (trainer_state.json) is read up to this size


class LogClock:
    """Time as the log tells it, when it does; otherwise the wall clock at the start of the check."""

    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def seen(self, t: float) -> None:
        """A record's own time: the clock moves to it (never back)."""
        if t > self.now:
            self.now = t

    def seen_all(self, times: np.ndarray) -> np.ndarray:
        """`seen` of each time in order (NaN: a row without one), and the clock after each."""
        if not bool((times > self.now).any()):  # NaN compares false
            return np.full(len(times), self.now)  # a log written before the check began: the clock stays
        if times[0] >= self.now and times[0] > 0 and bool((times[1:] >= times[:-1]).all()):
            after = times.copy()  # a log's times in order, none missing (NaN compares false): themselves
            # (above 0: no zero whose sign `fmax` would keep from the clock)
        else:
            after = np.fmax.accumulate(np.concatenate(([self.now], times)))[1:]
        if len(after):
            self.now = float(after[-1])
        return after


@dataclass
class SourceInfo:
    """What reading one source to its end found: its lines and records, and what the report says beside it."""

    name: str
    format: str
    lines: int = 0
    records: int = 0
    skipped: list[str] = field(default_factory=list)


def make_engine(sources: list[OpenSource], preset: str | None, configs: list[str] | None,
                clock: Callable[[], float] = time.time) -> Engine:
    """The engine of a session over `sources`."""
    return Session(sources, preset=preset, configs=configs, clock=clock).engine


class Session:
    def __init__(self, sources: Iterable[OpenSource], *, preset: str | None = None,
                 configs: list[str] | None = None, clock: Callable[[], float] = time.time,
                 waiting: bool = False) -> None:
        """`waiting`: the sources are not read yet (a live follower reads them later); the dashboard shows
        no verdict for them until it has."""
        opened = list(sources)
        self.task = guess_task(opened)
        self.preset = preset or self.task.preset
        self.engine = Engine(config.load(self.preset, config_files(configs)), clock=clock)
        for o in opened:  # the task and precision the logs show
            state = self.engine.source(o.name, o.format)
            task.annotate(state, self.task)
            state.facts.setdefault("run_config", runconfig.read(o.head))
            if waiting:
                state.facts["waiting"] = True

    def read_path(self, src: OpenSource) -> SourceInfo:
        """An event file or a run folder: its adapter reads the files itself, all of them at once here."""
        info = SourceInfo(src.name, src.format)
        records = src.parser.adapter.read_new(src.path)  # type: ignore[attr-defined]
        records += src.parser.finish()
        info.records = len(records)
        self.feed(records)
        self.finish(src.name)
        info.skipped.extend(src.parser.notes() + self.notes(src.name))
        return info

    def read_file(self, src: OpenSource) -> SourceInfo:
        """`src` read to its end and judged (`check`): in blocks through the scanner, or whole when its format
        is one document, or by its adapter when that reads paths; then the source is finished."""
        if reads_path(type(src.parser.adapter)):
            return self.read_path(src)
        engine = self.engine
        info = SourceInfo(src.name, src.format)
        parser = src.parser
        with open_checked(src.path) as f:
            if parser.adapter.whole_file:
                data = f.read(MAX_DOCUMENT)
                info.lines = data.count(b"\n") + 1
                records = parser.document(data.decode("utf-8", "replace"))
                info.records = len(records)
                self.feed(records)
            else:
                try:
                    for batch in parser.read_file(f, BACKLOG_BLOCK):  # one batch per block, judged in rounds
                        if not batch.empty:
                            info.records += batch.size
                            self.feed_batch(batch, more=True)
                except OSError as exc:
                    raise SourceError(f"{src.path}: read failed: {exc.strerror or exc}") from None
                self.settle()
        rest = parser.finish()
        info.records += len(rest)
        self.feed(rest)
        if not parser.adapter.whole_file:
            info.lines = parser.lines  # counted by the scanner, the last line included
        state = engine.sources[src.name]
        state.lines = info.lines
        if not parser.adapter.whole_file:  # a log that grows; a whole-file document is a snapshot
            state.facts.setdefault("quiet_s", _quiet_for(src.path))
        self.finish(src.name)
        info.skipped.extend(src.parser.notes() + self.notes(src.name))
        return info

    def feed(self, records: list[Record]) -> list[AlertChange]:
        """Records of one or more sources, in the order read; judged as one batch."""
        return self.engine.feed_all(records) if records else []

    def feed_batch(self, batch: Batch, *, more: bool = False) -> list[AlertChange]:
        """One source's batch, as an adapter read it from a block of bytes (`more`: see
        `Engine.feed_batch`)."""
        return self.engine.feed_batch(batch, more=more)

    def settle(self) -> list[AlertChange]:
        """The rows batches fed with `more` left held, judged now."""
        return self.engine.settle()

    def finish(self, source: str | None = None) -> list[AlertChange]:
        return self.engine.finish(source)

    def notes(self, source: str) -> list[str]:
        """What a report says beside a source's findings: the waits that cannot run on it, and the rules
        that failed on it (the engine switched them off there)."""
        return self.untimed_waits(source) + self.engine.failures(source) + self.engine.cap_notes(source)

    def untimed_waits(self, source: str) -> list[str]:
        """Rules whose `for` or `keep_firing_for` is a time, when this source printed no time: the clock of
        a log without timestamps never moves, so such a rule can never fire on it. Said once, not hidden."""
        state = self.engine.sources.get(source)
        if state is None or state.timed:
            return []
        out = []
        for spec in self.engine.config.rules.values():
            if not spec.enabled:
                continue
            for what, d in (("for", spec.for_), ("keep_firing_for", spec.keep_firing_for)):
                if d.seconds and spec.id in self.engine.judged:
                    out.append(f"{spec.id}: `{what}: {d}` counts seconds, but this log prints no times, so "
                               f"it cannot fire here; give it a number of steps instead")
        return out


def _quiet_for(path: Path) -> float | None:
    """Seconds since the file last changed, on the wall clock (the run.ended_early rule reads it)."""
    try:
        return max(0.0, time.time() - path.stat().st_mtime)
    except OSError:
        return None
