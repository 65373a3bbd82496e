"""What a rule is: a plain function of the store and the newest record, plus its spec from a preset.

A rule answers one question each time it is asked: does my condition hold now for this subject?
It returns a Finding (holds, with the evidence) or None (does not hold). The alert life cycle
(pending, firing, resolved, `for`, `keep_firing_for`, dedup, inhibition) is not the rule's job:
trainwatch.alerts does it the same way for every rule.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from trainwatch.model import Event, EventKind, Finding, Retraction
from trainwatch.names import Quality
from trainwatch.plans import Plan
from trainwatch.rulespec import RuleSpec
from trainwatch.store import MetricStore, Point, Series


@dataclass
class SourceState:
    """What the engine knows about one source beyond its metrics."""

    name: str
    format: str = ""
    lines: int = 0
    step: int | None = None
    total_steps: int | None = None
    total_counted: bool = False  # total_steps came from a counter (`N/M`) or a banner, not a setting alone
    facts: dict[str, Any] = field(default_factory=dict)  # from banners: batch size, accumulation, world size...
    last_line: str = ""
    last_progress_at: float | None = None  # clock time of the last new step
    ended: bool = False  # the end-of-training summary was seen (a crash is not an end: a supervisor may restart it)
    events: int = 0
    phase: str = "train"  # train, eval or checkpoint: the stall detector allows longer silences in the last two
    first_error: dict[str, Any] | None = None  # the first critical error told: later errors may be its echoes
    timed: bool = False  # some record carried the log's own time: time-based `for` can count on it
    plans: dict[str, Plan] = field(default_factory=dict)  # unit -> the planned total the log set last in it
    early_stop: dict[str, Any] | None = None  # the run said it stopped itself (line, step, text)
    stops: list[int] = field(default_factory=list)  # the lines of every early stop told (one per fold trained)
    restarts: list[int] = field(default_factory=list)
    """Lines where the step counter went back (a relaunch, a resume from an earlier checkpoint) or another
    training began: each starts an attempt, and time in the log is (attempt, step), not the step alone."""


@dataclass
class RuleContext:
    """Everything a rule may look at; `now` is the injected clock's time, never the wall clock."""

    store: MetricStore
    sources: dict[str, SourceState]
    now: float
    quality: Quality = field(default_factory=Quality)  # which way is better, by metric name

    def series(self, name: str, source: str) -> Series | None:
        return self.store.get(name, source)


class Rule:
    """Base for coded rules. Subclasses set `id` and the triggers, and override the hooks they need."""

    id: ClassVar[str]
    watches: ClassVar[tuple[str, ...]] = ()
    """Canonical metric names whose new samples trigger `on_sample`; ("*",) means every metric."""
    events: ClassVar[tuple[EventKind, ...]] = ()
    """Event kinds that trigger `on_event`."""
    ticks: ClassVar[bool] = False
    """Whether `on_tick` runs on the clock (stall and other time-based rules)."""
    once: ClassVar[bool] = False
    """A one-time judgement about the run (how it started, what a resume did): what it says stays true
    once said, nothing can recover from it. When its condition stops holding the alert is told as
    `ended`, never as resolved, and the headless line says nothing more."""
    params: ClassVar[type | None] = None
    """The rule's parameter dataclass (typed fields, no defaults: those live in the YAML). The config
    checks the YAML against it at load and hands the rule an instance as `self.p`; without one, `self.p`
    is the YAML's untyped mapping."""
    p: Any

    def __init__(self, spec: RuleSpec) -> None:
        self.spec = spec
        self.p = spec.params

    def on_sample(self, ctx: RuleContext, series: Series, point: Point) -> Finding | Retraction | None:
        """A Finding while the condition holds, None while it does not, and a Retraction when later data
        shows that what the rule reported was wrong."""
        return None

    def gate(self, ctx: RuleContext, series: Series, step: np.ndarray, value: np.ndarray) -> np.ndarray | None:
        """Which of these new rows of `series` (not stored yet: the series ends before them) `on_sample`
        must see, as a boolean per row; None means every row. A row may be left out only when
        `on_sample` would answer it None and `absorb` does to the rule what seeing it would have done.
        The engine shows every row anyway while the rule's alert on the metric is pending or firing (a
        None resolves it) and, after a row it showed, once `gated` says no. So a backlog reaches a row
        rule only at the rows that can matter to it."""
        return None

    def absorb(self, ctx: RuleContext, series: Series, step: np.ndarray, value: np.ndarray) -> None:
        """Rows `gate` left out, in order, before the next row shown (or at the end of a stretch)."""

    def gated(self, source: str) -> bool:
        """Whether the gate computed before the last row shown still holds (False: show every row)."""
        return True

    def on_event(self, ctx: RuleContext, event: Event) -> Finding | None:
        return None

    def on_tick(self, ctx: RuleContext) -> Iterable[tuple[str, str, Finding | None]]:
        """(source, subject, finding or None) for every subject the rule judged on this tick."""
        return ()

    def on_end(self, ctx: RuleContext, source: str) -> Iterable[Finding]:
        """Findings that need the whole run (e.g. the final loss level), when a source's data ends."""
        return ()

    def lower_at_end(self, ctx: RuleContext, source: str, alerts: Iterable[Any]) -> None:
        """Once a source's data has ended, lowers this rule's alerts that the rest of the run showed to be
        less than they looked when they fired. Nothing by default."""

    def withdrawn_at_end(self, ctx: RuleContext, source: str, alerts: Iterable[Any]) -> list[tuple[str, str]]:
        """Once a source's data has ended, (subject, why) of this rule's alerts the rest of the run
        disproved (a rise that came back down): the book withdraws them, as a live retraction. None by
        default."""
        return []


def finite(values: Iterable[float]) -> list[float]:
    return [v for v in values if math.isfinite(v)]


def median(values: list[float]) -> float:
    s = sorted(values)
    n = len(s)
    if not n:
        return math.nan
    mid = n // 2
    return s[mid] if n % 2 else (s[mid - 1] + s[mid]) / 2
