"""The engine: records in, alerts out. Plain synchronous Python, no threads, no UI, no wall clock.

Sources and adapters hand it records one at a time (`feed`); a live driver also calls `tick` on
its timer so time-based rules (the stall detector) can judge silence. Time comes from the injected
clock, so tests run hours of simulated time instantly.
"""

from __future__ import annotations

import fnmatch
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from trainwatch.alerts import AlertBook, AlertChange
from trainwatch.batch import Batch
from trainwatch.config import Config, RuleSpec
from trainwatch.lifecycle import Cycle, Phase, Step, advance
from trainwatch.model import Alert, Event, EventKind, Finding, Record, Retraction, Sample, Severity
from trainwatch.names import Canonicalizer
from trainwatch.rules import build_rules
from trainwatch.rules.array import ArrayRule, Window
from trainwatch.rules.base import Rule, RuleContext, SourceState
from trainwatch.store import RECENT_POINTS, MetricStore, Series

Listener = Callable[[AlertChange], None]

ARRAY_FLUSH = RECENT_POINTS // 2
"""New rows of one series held for the array rules before they are judged: a batch larger than this is
judged in pieces, so the history a rule declared is still in the store's recent window."""


class Engine:
    def __init__(self, config: Config, *, clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self.clock = clock
        self.store = MetricStore()
        self.sources: dict[str, SourceState] = {}
        self.book = AlertBook(config)
        self.canon = Canonicalizer(config.aliases)
        self.rules: list[Rule] = build_rules(config)
        self.listeners: list[Listener] = []
        self.changes: int = 0
        self._ctx = RuleContext(self.store, self.sources, clock())
        # per metric: each rule's sample hook, its spec and id
        self._hooks: dict[str, list[tuple[Callable[..., Finding | Retraction | None], RuleSpec, str]]] = {}
        self._by_event: dict[EventKind, list[Rule]] = {}
        self._by_signature: dict[str, list[Rule]] = {}
        self._tickers = [r for r in self.rules if r.ticks]
        self._arrays: dict[str, list[ArrayRule]] = {}  # metric -> the array rules watching it
        # rows not yet judged, per (source, metric): the series, its new points, their times and feed order
        self._held: dict[tuple[str, str], tuple[Series, list[Sample], list[float], list[int]]] = {}
        self._seq = 0  # samples fed so far: the order array rules' transitions reach the book in
        self._cycles: dict[tuple[str, str, str], Cycle] = {}
        self.judged: set[str] = set()  # ids of the rules some sample was shown to (their metric was logged)
        self._seen = getattr(clock, "seen", None)
        """Clocks that tell time as the log does (check's) are shown each record's own time."""
        for rule in self.rules:
            for kind in rule.events:
                self._by_event.setdefault(kind, []).append(rule)
            sig = getattr(rule, "signature", "")
            if sig:
                self._by_signature.setdefault(sig, []).append(rule)

    # -- input -----------------------------------------------------------------------------------

    def source(self, name: str, fmt: str = "") -> SourceState:
        state = self.sources.get(name)
        if state is None:
            state = self.sources[name] = SourceState(name, fmt)
        elif fmt:
            state.format = fmt
        return state

    def feed(self, record: Record) -> list[AlertChange]:
        """One record: a batch of one, judged at once."""
        if isinstance(record, Sample):
            out = self._sample(record)
            return out + self._tell(self._judge_held()) if self._held else out
        return self._tell(self._judge_held()) + self._event(record)

    def feed_all(self, records: Iterable[Record]) -> list[AlertChange]:
        out: list[AlertChange] = []
        for r in records:
            if isinstance(r, Sample):
                out.extend(self._sample(r))
                continue
            if self._held and self._barrier(r):
                out.extend(self._tell(self._judge_held()))
            out.extend(self._event(r))
        out.extend(self._tell(self._judge_held()))
        return out

    def _barrier(self, e: Event) -> bool:
        """Whether the rows held must be judged before this event: rules answer it (their alerts keep the
        log's order, which inhibition depends on), or it starts a new run in the same log. Progress
        redraws, which come with every line of some logs, are not barriers."""
        return (e.kind in self._by_event or e.kind is EventKind.ERROR
                or (e.kind is EventKind.INFO and bool(e.fields.get("new_run"))))

    def feed_batch(self, batch: Batch) -> list[AlertChange]:
        """A batch in log order: its samples between events are judged together by the array rules."""
        return self.feed_all(batch.records())

    def _sample(self, s: Sample) -> list[AlertChange]:
        name = s.name = self.canon(s.name)
        source = s.source
        state = self.sources.get(source) or self.source(source)
        if s.time is not None:
            state.timed = True
            if self._seen is not None:
                self._seen(s.time)
        step = s.step
        if step is None:
            step = state.step if state.step is not None else 0
            s.step_inferred = True
        elif step != state.step:
            state.step = step
            state.last_progress_at = self.clock()
            state.phase = "train"
        elif state.phase != "train" and not name.startswith("eval_"):
            # a training line after an eval or a checkpoint, at the step it was taken at (nanoGPT logs
            # `step 300: ... val loss`, saves, then `iter 300: loss`): training has resumed
            state.phase = "train"
            state.last_progress_at = self.clock()
        series = self.store.add(s, step)  # `s` itself becomes the series' newest point
        hooks = self._hooks.get(name)
        if hooks is None:
            rules = self._rules_for(name)
            self.judged.update(r.spec.id for r in rules)
            self._arrays[name] = [r for r in rules if isinstance(r, ArrayRule)]
            hooks = self._hooks[name] = [(r.on_sample, r.spec, r.spec.id) for r in rules
                                         if not isinstance(r, ArrayRule)]
        ctx = self._ctx
        now = ctx.now = self.clock()
        flushed: list[AlertChange] = []
        if self._arrays[name]:
            held = self._held.get((source, name))
            if held is None:
                held = self._held[(source, name)] = (series, [], [], [])
            held[1].append(s)
            held[2].append(now)
            held[3].append(self._seq)
            self._seq += 1
            if len(held[1]) >= ARRAY_FLUSH:
                flushed = self._tell(self._judge_held())
                ctx.now = now
        if not hooks:
            return flushed
        tracked = self.book.tracked
        out: list[AlertChange] = []
        for on_sample, spec, rule_id in hooks:
            finding = on_sample(ctx, series, s)
            if finding is None:
                if tracked and (rule_id, source, name) in tracked:  # a pending or firing alert to resolve
                    out.extend(self._before_book())
                    out.extend(self.book.judge(spec, source, name, None, now))
                continue
            out.extend(self._before_book())
            if isinstance(finding, Retraction):
                out.extend(self.book.retract(spec, source, finding.subject or name, finding.reason, now))
                continue
            finding.source = finding.source or source
            finding.step = finding.step if finding.step is not None else step
            finding.line = finding.line or s.line
            finding.step_inferred = finding.step_inferred or s.step_inferred
            if not finding.subject:
                finding.subject = name
            out.extend(self.book.judge(spec, source, finding.subject, finding, now))
        if out:
            self._tell(out)
        return flushed + out if flushed else out

    def _before_book(self) -> list[AlertChange]:
        """A row rule is about to change the book: the array rules' transitions for the rows held so far
        go first, so alerts reach the book in the log's order whichever kind of rule raised them."""
        if not self._held:
            return []
        now = self._ctx.now
        out = self._judge_held()
        self._ctx.now = now
        return out

    def _rules_for(self, name: str) -> list[Rule]:
        out = []
        for rule in self.rules:
            for pattern in rule.watches:
                if pattern == name or pattern == "*" or (("*" in pattern or "?" in pattern)
                                                         and fnmatch.fnmatchcase(name, pattern)):
                    out.append(rule)
                    break
        return out

    def _event(self, e: Event) -> list[AlertChange]:
        state = self.source(e.source)
        state.events += 1
        if e.time is not None:
            state.timed = True
            if self._seen is not None:
                self._seen(e.time)
        now = self.clock()
        if e.step is None:
            e.step = state.step
        if e.kind is EventKind.PROGRESS:
            step = e.fields.get("step")
            total = e.fields.get("total")
            if isinstance(total, int) and total > 0:
                state.total_steps = total
            if isinstance(step, int) and step != state.step:
                state.step = step
                state.last_progress_at = now
                state.phase = "train"
        elif e.kind is EventKind.INFO:
            state.facts.update(e.fields)
            if e.fields.get("new_run"):  # another training starts in the same log: its curves start afresh
                self.store.drop_source(e.source)
                state.step = None
            total = e.fields.get("total_steps")
            if isinstance(total, int) and total > 0:
                state.total_steps = total
        elif e.kind is EventKind.EVAL_START:
            state.phase = "eval"
        elif e.kind is EventKind.CHECKPOINT:
            state.phase = "checkpoint"
        elif e.kind is EventKind.TRAIN_END:
            state.ended = True
        if e.text:
            state.last_line = e.text.splitlines()[-1] if "\n" in e.text else e.text
        rules = list(self._by_event.get(e.kind, ()))
        if e.kind is EventKind.ERROR:
            rules += self._by_signature.get(e.signature, ())
        ctx = self._ctx
        ctx.now = now
        out: list[AlertChange] = []
        for rule in rules:
            finding = rule.on_event(ctx, e)
            if finding is None:
                continue
            finding.source = finding.source or e.source
            finding.line = finding.line or e.line
            if finding.step is None:
                finding.step = e.step
            subject = finding.subject = finding.subject or e.signature or e.kind.value
            out.extend(self.book.judge(rule.spec, e.source, subject, finding, now, one_shot=True))
        return self._tell(out)

    # -- time and the end of data -------------------------------------------------------------

    def tick(self) -> list[AlertChange]:
        """Lets time-based rules judge the silence since the last record."""
        out = self._judge_held()
        ctx = self._ctx
        ctx.now = self.clock()
        for rule in self._tickers:
            for source, subject, finding in rule.on_tick(ctx):
                if finding is not None:
                    finding.source = finding.source or source
                out.extend(self.book.judge(rule.spec, source, subject, finding, ctx.now))
        return self._tell(out)

    def finish(self, source: str | None = None) -> list[AlertChange]:
        """The data of one source (or all) has ended: rules that need the whole run judge now."""
        out = self._judge_held()
        ctx = self._ctx
        ctx.now = self.clock()
        for name in [source] if source is not None else list(self.sources):
            for rule in self.rules:
                for finding in rule.on_end(ctx, name):
                    finding.source = finding.source or name
                    out.extend(self.book.judge(rule.spec, name, finding.subject or rule.spec.id, finding,
                                               ctx.now, one_shot=True))
        return self._tell(out)

    # -- array rules ---------------------------------------------------------------------------

    def _judge_held(self) -> list[AlertChange]:
        """The array rules judge the rows held since they last did. Each rule plans its transitions over
        its series' rows; the plans reach the book in the order the rows were fed (then series, then
        rule), as they did row by row, so inhibition between rules sees alerts fire in the log's order.
        The caller tells the listeners (with its own changes, in order)."""
        if not self._held:
            return []
        held, self._held = self._held, {}
        plans: list[tuple[int, int, int, int, _Planned]] = []
        for k, (series, rows, times, seqs) in enumerate(held.values()):
            now = np.asarray(times, dtype=np.float64)
            for r, rule in enumerate(self._arrays[series.name]):
                for n, planned in enumerate(self._plan(rule, series, rows, now)):
                    plans.append((seqs[planned.row], k, r, n, planned))
        plans.sort(key=lambda p: p[:4])
        out: list[AlertChange] = []
        for *_, planned in plans:
            out.extend(self._apply(planned))
        return out

    def _plan(self, rule: ArrayRule, series: Series, rows: list[Sample], now: np.ndarray) -> list[_Planned]:
        """The rule's conditions over the new rows, run through the life cycle (up to each withdrawal,
        then afresh): what the book is to be told, row by row. Findings are made here, where an episode
        begins."""
        w = Window.of(series, rows, rule.history)  # type: ignore[arg-type]  # a Sample is a Point
        ctx = self._ctx
        ctx.now = float(now[-1])
        cond = np.asarray(rule.condition(ctx, w), dtype=bool)
        key = (rule.spec.id, series.source, series.name)
        out: list[_Planned] = []
        lo = 0
        for at, reason in rule.retractions(ctx, w):
            row = at - w.start
            out.extend(self._cycle(rule, w, cond, now, lo, row + 1))
            out.append(_Planned(rule, w, cond, now, row, "retract", reason=reason))
            self._cycles[key] = Cycle()
            lo = row + 1
        out.extend(self._cycle(rule, w, cond, now, lo, len(cond)))
        return out

    def _cycle(self, rule: ArrayRule, w: Window, cond: np.ndarray, now: np.ndarray, lo: int,
               hi: int) -> list[_Planned]:
        """The alert life cycle over new rows [lo, hi), as planned transitions."""
        spec = rule.spec
        key = (spec.id, w.source, w.name)
        cycle = self._cycles.get(key)
        if cycle is None:
            cycle = self._cycles[key] = Cycle()
        out: list[_Planned] = []
        at = lo  # rows before `at` are accounted for
        for t in advance(cycle, cond[lo:hi], now[lo:hi], spec.for_, spec.keep_firing_for):
            row = lo + t.row
            if t.step is Step.PENDING:
                f = rule.finding(self._ctx, w, w.start + row)
                f.source = f.source or w.source
                f.step = f.step if f.step is not None else int(w.step[w.start + row])
                f.line = f.line or int(w.line[w.start + row])
                f.step_inferred = f.step_inferred or bool(w.inferred[w.start + row])
                f.subject = f.subject or w.name
                out.append(_Planned(rule, w, cond, now, row, "begin", finding=f))
            elif t.step is Step.FIRING:
                out.append(_Planned(rule, w, cond, now, row, "fire", held_from=at))
            elif t.step is Step.DROPPED:
                out.append(_Planned(rule, w, cond, now, row, "drop"))
            else:
                out.append(_Planned(rule, w, cond, now, row, "resolve", held_from=at))
            at = row + 1
        if cycle.phase is not Phase.IDLE and at < hi:
            out.append(_Planned(rule, w, cond, now, hi - 1, "hold", held_from=at))
        return out

    def _apply(self, p: _Planned) -> list[AlertChange]:
        spec, source, subject, book = p.rule.spec, p.w.source, p.w.name, self.book
        t = float(p.now[p.row])
        if p.kind == "begin":
            assert p.finding is not None
            book.begin(spec, source, subject, p.finding, t)
        elif p.kind == "fire":
            self._hold(p.rule, p.w, p.cond, p.held_from, p.row + 1, p.now)
            return book.fire(spec, source, subject, t)
        elif p.kind == "drop":
            book.drop(spec, source, subject)
        elif p.kind == "resolve":
            self._hold(p.rule, p.w, p.cond, p.held_from, p.row, p.now)
            return book.resolve(spec, source, subject, t)
        elif p.kind == "retract":
            return book.retract(spec, source, subject, p.reason, t)
        else:  # still pending or firing at the end of the rows: the rows it held on
            self._hold(p.rule, p.w, p.cond, p.held_from, p.row + 1, p.now)
        return []

    def _hold(self, rule: ArrayRule, w: Window, cond: np.ndarray, lo: int, hi: int, now: np.ndarray) -> None:
        """Tells the book about the rows in [lo, hi) where the condition held."""
        if hi <= lo:
            return
        hits = np.flatnonzero(cond[lo:hi])
        if not len(hits):
            return
        last = lo + int(hits[-1])
        row = w.start + last
        self.book.hold(rule.spec, w.source, w.name, len(hits), int(w.step[row]), rule.last_value(w, row),
                       float(now[last]))

    def _tell(self, changes: list[AlertChange]) -> list[AlertChange]:
        if changes:
            self.changes += len(changes)
            for listener in self.listeners:
                for c in changes:
                    listener(c)
        return changes

    # -- views ------------------------------------------------------------------------------------

    def alerts(self, *, inhibited: bool = True) -> list[Alert]:
        """Every alert that fired, most severe first, then by step. With `inhibited=False`, only those
        told to the sinks: an alert that inhibition kept quiet all along (an echo of its cause) is left
        out, so a report says what a live follower said."""
        found = self.book.all() if inhibited else (a for a in self.book.all() if a.told and not a.retracted)
        return sorted(found, key=lambda a: (-a.severity, a.first_step if a.first_step is not None else math.inf,
                                                      a.first_line))

    def worst(self) -> Severity | None:
        worst = None
        for a in self.book.all():
            if a.severity > Severity.INFO and not a.retracted and (worst is None or a.severity > worst):
                worst = a.severity
        return worst


@dataclass(slots=True)
class _Planned:
    """One thing an array rule's life cycle tells the book, at new row `row` of window `w`."""

    rule: ArrayRule
    w: Window
    cond: np.ndarray
    now: np.ndarray
    row: int
    kind: str  # begin, fire, drop, resolve, retract, hold
    finding: Finding | None = None
    reason: str = ""
    held_from: int = 0  # `fire`, `resolve` and `hold` count the rows held from here
