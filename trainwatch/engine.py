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

from trainwatch.alerts import AlertBook, AlertChange
from trainwatch.config import Config, RuleSpec
from trainwatch.model import Alert, Event, EventKind, Finding, Record, Retraction, Sample, Severity
from trainwatch.names import Canonicalizer
from trainwatch.rules import build_rules
from trainwatch.rules.base import Rule, RuleContext, SourceState
from trainwatch.store import MetricStore

Listener = Callable[[AlertChange], None]


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
        if isinstance(record, Sample):
            return self._sample(record)
        return self._event(record)

    def feed_all(self, records: Iterable[Record]) -> list[AlertChange]:
        out: list[AlertChange] = []
        for r in records:
            out.extend(self.feed(r))
        return out

    def _sample(self, s: Sample) -> list[AlertChange]:
        name = s.name = self.canon(s.name)
        source = s.source
        state = self.sources.get(source) or self.source(source)
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
            hooks = self._hooks[name] = [(r.on_sample, r.spec, r.spec.id) for r in self._rules_for(name)]
        if not hooks:
            return []
        ctx = self._ctx
        now = ctx.now = self.clock()
        tracked = self.book.tracked
        out: list[AlertChange] = []
        for on_sample, spec, rule_id in hooks:
            finding = on_sample(ctx, series, s)
            if finding is None:
                if tracked and (rule_id, source, name) in tracked:  # a pending or firing alert to resolve
                    out.extend(self.book.judge(spec, source, name, None, now))
                continue
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
        return self._tell(out) if out else out

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
        ctx = self._ctx
        ctx.now = self.clock()
        out: list[AlertChange] = []
        for rule in self._tickers:
            for source, subject, finding in rule.on_tick(ctx):
                if finding is not None:
                    finding.source = finding.source or source
                out.extend(self.book.judge(rule.spec, source, subject, finding, ctx.now))
        return self._tell(out)

    def finish(self, source: str | None = None) -> list[AlertChange]:
        """The data of one source (or all) has ended: rules that need the whole run judge now."""
        ctx = self._ctx
        ctx.now = self.clock()
        out: list[AlertChange] = []
        for name in [source] if source is not None else list(self.sources):
            for rule in self.rules:
                for finding in rule.on_end(ctx, name):
                    finding.source = finding.source or name
                    out.extend(self.book.judge(rule.spec, name, finding.subject or rule.spec.id, finding,
                                               ctx.now, one_shot=True))
        return self._tell(out)

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
