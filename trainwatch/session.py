"""A session: one watch of one run, whether `check` reads it to the end, `tail` follows it or `demo`
replays it.

The session owns what the three used to set up each in its own way: the sources' detection samples,
the task and preset chosen from them, the config files, the engine, and the clock policy (the log's
own time for `check`, the wall clock for `tail`, simulated time in tests). Records go in through
`feed`, in batches, so every mode judges them the same way; the reading itself (a whole file, a
followed file, a replay) stays with the sources.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from trainwatch import config, runconfig, task
from trainwatch.alerts import AlertChange
from trainwatch.batch import Batch
from trainwatch.engine import Engine
from trainwatch.model import Record
from trainwatch.runner import OpenSource, config_files, guess_task


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
