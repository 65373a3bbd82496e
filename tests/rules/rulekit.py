"""Helpers: a real Engine with a preset and a fake clock, fed synthetic samples and events."""

from __future__ import annotations

import math
import random
from pathlib import Path

from trainwatch import config
from trainwatch.engine import Engine
from trainwatch.model import AlertState, Event, EventKind, Sample


class Clock:
    def __init__(self) -> None:
        self.t = 1_000_000.0

    def __call__(self) -> float:
        return self.t


class Run:
    """An engine plus shorthand to feed one source's metrics step by step."""

    def __init__(self, preset: str = "sft", user_files: list[Path] | None = None, source: str = "run.log",
                 fmt: str | None = None) -> None:
        self.clock = Clock()
        self.engine = Engine(config.load(preset, user_files), clock=self.clock)
        self.source = source
        if fmt is not None:  # the adapter that read the source (some rules judge only some trainers' logs)
            self.engine.source(source, fmt)
        self.changes: list = []
        self.line = 0

    def sample(self, name: str, value: float, step: int | None, source: str | None = None) -> list:
        self.line += 1
        self.clock.t += 1.0
        ch = self.engine.feed(Sample(name, value, step, source=source or self.source, line=self.line))
        self.changes.extend(ch)
        return ch

    def step(self, step: int, **metrics: float) -> list:
        out = []
        for k, v in metrics.items():
            out += self.sample(k, v, step)
        return out

    def event(self, kind: EventKind, step: int | None = None, signature: str = "", text: str = "",
              **fields) -> list:
        self.line += 1
        self.clock.t += 1.0
        ch = self.engine.feed(Event(kind, source=self.source, line=self.line, step=step, signature=signature,
                                    text=text, fields=fields))
        self.changes.extend(ch)
        return ch

    def finish(self) -> list:
        ch = self.engine.finish(self.source)
        self.changes.extend(ch)
        return ch

    def fired(self) -> list[str]:
        """Rule ids told as FIRING, in order (an alert held quiet by inhibition is not told)."""
        return [c.alert.rule for c in self.changes if c.state is AlertState.FIRING]

    def alert(self, rule: str):
        for c in self.changes:
            if c.alert.rule == rule and c.state is AlertState.FIRING:
                return c.alert
        raise AssertionError(f"{rule} never fired; fired: {self.fired()}")


def loss_run(losses: list[float], first_step: int = 0, every: int = 1) -> Run:
    """A finished run whose only metric is `losses`, one point every `every` steps from `first_step`."""
    r = Run()
    for i, v in enumerate(losses):
        r.step(first_step + i * every, loss=v)
    r.finish()
    return r


def healthy_loss(n: int, seed: int = 0, start: float = 2.5, end: float = 1.0, noise: float = 0.06) -> list[float]:
    """A noisy, decreasing, flattening curve like a real fine-tune's."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        level = end + (start - end) * math.exp(-4.0 * i / n)
        out.append(level * (1 + rnd.gauss(0, noise)))
    return out


def warmup_decay_lr(step: int, total: int, peak: float = 2e-5, warmup: int = 10) -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    return peak * max(0.0, (total - step) / (total - warmup))




def run_log(path: Path, preset: str = "sft") -> Engine:
    """A real log through detection, its adapter and the scanner, into an engine; the data then ends."""
    from trainwatch import task
    from trainwatch.adapters import detect, get
    from trainwatch.adapters.pipeline import SourceParser

    text = Path(path).read_text(encoding="utf-8", errors="replace")
    name = detect(text[:65536], str(path))
    assert name is not None, f"no adapter for {path}"
    clock = Clock()
    eng = Engine(config.load(preset), clock=clock)
    llm = task.llm(text[:65536])  # what a follower notes of the source before it feeds it
    if llm is not None:
        eng.source(str(path), name).facts["llm"] = llm
    parser = SourceParser(get(name)(str(path)))
    if parser.adapter.whole_file:
        records = parser.document(text)
    else:
        records = [r for i, line in enumerate(text.splitlines(), 1) for r in parser.feed(line, i)]
    records += parser.finish()
    for r in records:
        clock.t += 1.0
        eng.feed(r)
    eng.finish()
    return eng


def told(eng: Engine) -> dict[str, int | None]:
    """Rule id -> first step, for every alert that fired and was not held quiet."""
    return {a.rule: a.first_step for a in eng.alerts() if not eng.book.is_inhibited(a)}
