"""The engine's state, in one place: the store, the sources, the alert book, the rules and the tables
that route metrics to them, the rows held for the next round. The layers above it (metrics, progress,
dispatch, rounds, core) add methods only."""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable

import numpy as np

from trainwatch import incident
from trainwatch.alerts import AlertBook, AlertChange
from trainwatch.config import Config, RuleSpec
from trainwatch.model import GPU_SOURCE, AlertState, EventKind, Finding
from trainwatch.names import Canonicalizer, Quality
from trainwatch.rules import build_rules
from trainwatch.rules.array import ArrayRule
from trainwatch.rules.base import Rule, RuleContext, SourceState
from trainwatch.rules.crash import crashed
from trainwatch.runconfig import RunConfig
from trainwatch.runconfig.fit import RunView
from trainwatch.runconfig.fit import fit as fit_fixes
from trainwatch.store import MetricStore, Series

Listener = Callable[[AlertChange], None]

ADAMW_TRAINERS = frozenset({"hf_console", "trainer_state"})
"""Formats whose trainer uses AdamW unless told otherwise (the HF Trainer): an LR is judged against
AdamW's usual range when the log names no optimiser."""


class EngineState:
    """What the engine holds (see the module), and the few calls every layer makes: a source's state,
    telling the listeners, whether a run is over."""

    def __init__(self, config: Config, *, clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self.clock = clock
        self.store = MetricStore()
        self.sources: dict[str, SourceState] = {}
        self.book = AlertBook(config, fit=self._fit_fixes)
        self.canon = Canonicalizer(config.aliases)
        self.rules: list[Rule] = build_rules(config)
        self.book.once = frozenset(r.spec.id for r in self.rules if r.once)
        self.listeners: list[Listener] = []
        self.changes: int = 0
        self._ctx = RuleContext(self.store, self.sources, clock(), Quality(config.directions))
        # per metric: each rule's sample hook, its spec and id
        self._hooks: dict[str, list[tuple[Rule, RuleSpec, str]]] = {}
        self._by_event: dict[EventKind, list[Rule]] = {}
        self._by_signature: dict[str, list[Rule]] = {}
        self._tickers = [r for r in self.rules if r.ticks]
        self._arrays: dict[str, list[ArrayRule]] = {}  # metric -> the array rules watching it
        self._metric: dict[str, int] = {}  # canonical metric name -> engine id (the index of `_names`)
        self._names: list[str] = []
        self._ids_of: dict[str, dict[str, int]] = {}  # source -> raw name -> engine id (or _dropped's)
        self._kept: dict[str, int] = {}  # source -> names admitted
        self.dropped_names: dict[str, int] = {}  # source -> names past the caps, not kept
        self._dropped: int | None = None  # the engine id every name past the caps maps to
        self._watched: tuple[set[str], re.Pattern[str] | None] | None = None  # see _named_by_rules
        self._hooked = np.zeros(0, dtype=bool)  # by metric id: row rules watch it
        self._is_eval = np.zeros(0, dtype=bool)  # by metric id: an evaluation metric (eval_*)
        self._held: dict[tuple[str, str], HeldRows] = {}  # rows stored but not yet judged, per (source, metric)
        self._held_rows = 0  # their rows, all series together
        self._held_most = 0  # the most rows one series holds
        self._roomy: set[Series] = set()  # series judged last round whose arrays held a round's room
        self._seq = 0  # rows fed so far: the order array rules' transitions reach the book in
        self.judged: set[str] = set()  # ids of the rules some sample was shown to (their metric was logged)
        self.rule_errors: list[tuple[str, str]] = []
        """(source, what happened) for each rule that raised on a log and was switched off for it."""
        self._broken: set[tuple[str, str]] = set()  # (rule id, source); source ANY: every source
        self._ended: set[str] = set()  # sources whose data has ended (`finish`): fixes quote the whole run
        self._seen = getattr(clock, "seen", None)
        """Clocks that tell time as the log does (check's) are shown each record's own time."""
        for rule in self.rules:
            for kind in rule.events:
                self._by_event.setdefault(kind, []).append(rule)
            sig = getattr(rule, "signature", "")
            if sig:
                self._by_signature.setdefault(sig, []).append(rule)

    def _fit_fixes(self, spec: RuleSpec, finding: Finding, fixes: tuple[str, ...]) -> tuple[str, ...]:
        """The fixes fitted to the run the finding is about: its configuration as its log printed it
        (the session puts it in the source's facts), its task, and the peak LR it logged."""
        state = self.sources.get(finding.source)
        facts = state.facts if state is not None else {}
        cfg = facts.get("run_config")
        lr = self.store.get("lr", finding.source)
        peak = None
        if lr is not None:  # the run's peak once it has ended, else the peak as the finding was made
            whole = finding.source in self._ended and lr.count > lr.nan_count + lr.inf_count
            peak = lr.maximum if whole else lr.peak_upto(finding.line)
            peak = peak if peak is not None and math.isfinite(peak) else None
        llm = facts.get("llm")
        adam = llm is True or (state is not None and state.format in ADAMW_TRAINERS)
        view = RunView(cfg if isinstance(cfg, RunConfig) else RunConfig(), llm=llm,
                       logged_lr=peak, logged_warmup=_logged_warmup(lr, peak),
                       default_optimizer="adam" if adam else "",
                       hf_trainer=(state is not None and state.format in ADAMW_TRAINERS)
                       or (isinstance(cfg, RunConfig) and cfg.hf_trainer))
        return fit_fixes(spec.family, _this_case(_this_side(fixes, finding), finding), view)

    @property
    def quality(self) -> Quality:
        """Which way is better for a metric, by its name (the table the rules ask, with the config's own)."""
        return self._ctx.quality

    def source(self, name: str, fmt: str = "") -> SourceState:
        state = self.sources.get(name)
        if state is None:
            state = self.sources[name] = SourceState(name, fmt)
        elif fmt:
            state.format = fmt
        return state

    def _tell(self, changes: list[AlertChange]) -> list[AlertChange]:
        if changes:
            self.changes += len(changes)
            if self.listeners and any(c.state is AlertState.FIRING and (c.alert.rule in incident.CHAIN
                                                                        or c.alert.rule in incident.OVERFITTING)
                                      for c in changes):
                self.fold_incidents()  # a link firing after its root is told as the echo it is, as check says
                changes = incident.root_first(changes)
            for listener in self.listeners:
                for c in changes:
                    listener(c)
        return changes

    def _run_over(self, source: str) -> bool:
        """The run behind `source` has ended (every run, for the GPUs): an alert that stops then has not
        recovered, the run just stopped making it hold."""
        state = self.sources.get(source)
        if state is not None and source != GPU_SOURCE:
            return state.ended or crashed(state)
        runs = [st for name, st in self.sources.items() if name != GPU_SOURCE]
        return bool(runs) and all(st.ended or crashed(st) for st in runs)

    def fold_incidents(self) -> None:
        """Folds each optimisation blow-up's chain into its root (trainwatch/incident.py); again is a no-op."""
        incident.fold(list(self.book.all()), self.store)


class HeldRows:
    """Rows of one series stored but not yet judged by its array rules: how many, and each one's feed
    order and clock time, in pieces as they came (only counted, for a series no array rule watches). The
    feed order is kept as each piece's rows in its stretch and the stretch's first place in the feed:
    only the few rows a rule plans a transition at need theirs."""

    __slots__ = ("n", "now", "seq", "series")

    def __init__(self, series: Series) -> None:
        self.series = series
        self.n = 0
        self.seq: list[tuple[int, np.ndarray]] = []  # (the stretch's first row's place, the rows of it)
        self.now: list[np.ndarray] = []

    def seq_at(self, row: int) -> int:
        """The feed order of the row-th row held."""
        for seq0, rows in self.seq:
            if row < len(rows):
                return seq0 + int(rows[row])
            row -= len(rows)
        raise IndexError(row)


_SIDES = {"above": "too low:", "below": "too high:"}


def _this_side(fixes: tuple[str, ...], finding: Finding) -> tuple[str, ...]:
    """A range rule's fixes for the side the value left its range by: a value above it hears no
    `Too low:` advice, one below no `Too high:`."""
    other = _SIDES.get(str(finding.evidence.get("direction", "")))
    if other is None:
        return fixes
    return tuple(f for f in fixes if not f.lower().startswith(other))


_CASE = re.compile(r"^\[([\w ,-]+)\]\s*")


def _this_case(fixes: tuple[str, ...], finding: Finding) -> tuple[str, ...]:
    """A fix written for some cases of a rule's condition (`[checkpoint] ...`, `[temp, write] ...`) fits a
    finding of one of them alone, told without its tag: a disk that filled with temporary files hears
    nothing of the checkpoint it did not write. The finding's case is its evidence's `case`; one with
    none hears no tagged fix."""
    case = str(finding.evidence.get("case", ""))
    out = []
    for fix in fixes:
        m = _CASE.match(fix)
        if m is None:
            out.append(fix)
        elif case in {c.strip() for c in m.group(1).split(",")}:
            rest = fix[m.end():]
            out.append(rest[:1].upper() + rest[1:])
    return tuple(out)


def _logged_warmup(lr: Series | None, peak: float | None) -> int | None:
    """The steps over which the logged LR rose from its first point (below half its peak) to its peak, where
    the run's first points show it: a warmup the log prints, though its config may not say."""
    if lr is None or peak is None or peak <= 0 or not lr.head:
        return None
    first = lr.head[0]
    if not first.value < 0.5 * peak:
        return None
    top = next((p for p in lr.head if p.value >= 0.95 * peak), None)
    return top.step - first.step if top is not None and top.step > first.step else None

