"""Rule dispatch: every way a rule is asked, and what its answers tell the alert book.

Row rules judge the rows their gate shows them (`_row_rules`); array rules judge the rows held for a
round at once (`_judge_held`), through the book's life cycle, planned per rule and recorded in the
order the rows were fed; event rules answer events; tickers judge silence on the clock (`tick`); every
rule may judge a source once its data ended (`finish`). A rule that raises on a log is switched off for
that log (`_broke`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from trainwatch import attempts
from trainwatch.alerts import AlertChange, Held
from trainwatch.engine.progress import Progress
from trainwatch.engine.state import HeldRows
from trainwatch.lifecycle import Step
from trainwatch.model import Event, EventKind, Finding, Retraction
from trainwatch.rules import crash
from trainwatch.rules.array import ArrayRule, JudgesRecovery, Window
from trainwatch.rules.base import Rule

ANY = "*"  # a rule switched off for every source (one that judges them all at once, on the clock)


class Dispatch(Progress):
    """Asks the rules and has the book record their answers (see the module)."""

    def _gates(self, src: str, present: list[int], rows_of: dict[int, np.ndarray],
               pick: Callable[[int], tuple[np.ndarray, np.ndarray]]) -> dict[int, list[Gate]]:
        """For each metric of the stretch that row rules watch, the rows each rule must see (`pick`: a
        metric's steps and values in the stretch)."""
        out: dict[int, list[Gate]] = {}
        book = self.book
        for k in present:
            if not self._hooked[k]:
                continue
            name = self._names[k]
            rows = rows_of[k]
            series = self.store.series(src, name)
            gs = []
            for rule, _spec, rule_id in self._hooks[name]:
                show = None
                if self._off(rule, src):
                    show = np.zeros(len(rows), dtype=bool)
                elif not book.tracks(rule_id, src, name):
                    try:
                        show = rule.gate(self._ctx, series, *pick(k))
                    except Exception as exc:  # see `_broke`
                        self._broke(rule, src, exc)
                        show = np.zeros(len(rows), dtype=bool)
                gs.append(Gate(rule, np.ones(len(rows), dtype=bool) if show is None else np.asarray(show, bool)))
            out[k] = gs
        return out

    def _still_gated(self, g: Gate, src: str, k: int) -> bool:
        return g.rule.gated(src) and not self.book.tracks(g.rule.spec.id, src, self._names[k])

    def _row_rules(self, source: str, name: str, now: float, gates: list[Gate], j: int, step: np.ndarray,
                   value: np.ndarray) -> list[AlertChange]:
        """The row rules watching `name` judge its newest row, the j-th of the metric's rows in the stretch
        (`step`, `value`), each rule only if its gate shows it that row, after the rows it left out."""
        series = self.store.series(source, name)
        point = series.last
        assert point is not None
        ctx = self._ctx
        ctx.now = now
        book = self.book
        out: list[AlertChange] = []
        for g, (rule, spec, rule_id) in zip(gates, self._hooks[name]):
            if not g.show[j]:
                continue
            if self._off(rule, source):
                g.done = j + 1
                continue
            try:
                if g.done < j:
                    rule.absorb(ctx, series, step[g.done:j], value[g.done:j])
                g.done = j + 1
                finding = rule.on_sample(ctx, series, point)
            except Exception as exc:  # see `_broke`
                self._broke(rule, source, exc)
                g.done = j + 1
                continue
            if finding is None:
                if book.tracks(rule_id, source, name) and not book.settled(spec, source, name):
                    out.extend(self._before_book())  # a pending or firing alert to resolve: in log order
                    out.extend(self.book.judge(spec, source, name, None, now))
                    if book.settled(spec, source, name):  # it resolved on this row (or a pending was dropped)
                        self._why_stopped(rule, Window.of(series, 1, 0), 0)
                continue
            if isinstance(finding, Retraction):
                out.extend(self._before_book())
                out.extend(self.book.retract(spec, source, finding.subject or name, finding.reason, now))
                continue
            finding.source = finding.source or source
            finding.step = finding.step if finding.step is not None else point.step
            finding.line = finding.line or point.line
            finding.step_inferred = finding.step_inferred or point.step_inferred
            if not finding.subject:
                finding.subject = name
            if not self.book.only_repeats(spec, source, finding.subject, finding):
                # the held rows' transitions first (log order); a firing alert's next row is only counted,
                # which no other alert reads: judging the held rows for each such row made every row of a
                # long-firing row rule's metric a round of its own
                out.extend(self._before_book())
            out.extend(self.book.judge(spec, source, finding.subject, finding, now))
        return self._tell(out) if out else out

    def _before_book(self) -> list[AlertChange]:
        """A row rule is about to change the book: the array rules' transitions for the rows held so far
        go first, so alerts reach the book in the log's order whichever kind of rule raised them."""
        if not self._held:
            return []
        now = self._ctx.now
        out = self._judge_held()
        self._ctx.now = now
        return out

    def _event(self, e: Event) -> list[AlertChange]:
        """An event noted on its source, then shown to the rules that answer its kind (or its signature)."""
        now = self._note_event(e)
        rules = list(self._by_event.get(e.kind, ()))
        if e.kind is EventKind.ERROR:
            rules += self._by_signature.get(e.signature, ())
        ctx = self._ctx
        ctx.now = now
        out: list[AlertChange] = []
        for rule in rules:
            if self._off(rule, e.source):
                continue
            try:
                finding = rule.on_event(ctx, e)
            except Exception as exc:  # see `_broke`
                self._broke(rule, e.source, exc)
                continue
            if finding is None:
                continue
            finding.source = finding.source or e.source
            finding.line = finding.line or e.line
            if finding.step is None:
                finding.step = e.step
            subject = finding.subject = finding.subject or e.signature or e.kind.value
            out.extend(self.book.judge(rule.spec, e.source, subject, finding, now, one_shot=True))
        return self._tell(out)

    def tick(self, *, settle: bool = True) -> list[AlertChange]:
        """Lets time-based rules judge the silence since the last record; with `settle`, the rows held
        are judged first (a live follower that spaces its rounds out passes False between them)."""
        out = self._judge_held() if settle else []
        ctx = self._ctx
        ctx.now = self.clock()
        for rule in self._tickers:
            if self._off(rule, ANY):
                continue
            try:
                told = list(rule.on_tick(ctx))
            except Exception as exc:  # see `_broke`
                self._broke(rule, ANY, exc)
                continue
            for source, subject, finding in told:
                if finding is not None:
                    finding.source = finding.source or source
                out.extend(self.book.judge(rule.spec, source, subject, finding, ctx.now))
                if finding is None and self._run_over(source):
                    self.book.stopped(rule.spec, source, subject, "the run ended")
        return self._tell(out)

    def finish(self, source: str | None = None) -> list[AlertChange]:
        """The data of one source (or all) has ended: rules that need the whole run judge now."""
        out = self._judge_held()
        ctx = self._ctx
        ctx.now = self.clock()
        for name in [source] if source is not None else list(self.sources):
            self.book.end_pending(name)
            for rule in self.rules:
                if self._off(rule, name):
                    continue
                try:
                    ended = list(rule.on_end(ctx, name))
                except Exception as exc:  # see `_broke`
                    self._broke(rule, name, exc)
                    continue
                for finding in ended:
                    finding.source = finding.source or name
                    out.extend(self.book.judge(rule.spec, name, finding.subject or rule.spec.id, finding,
                                               ctx.now, one_shot=True, at_end=True))
            for rule in self.rules:
                if not self._off(rule, name):
                    mine = [a for a in self.book.all() if a.rule == rule.spec.id]
                    rule.lower_at_end(ctx, name, mine)
                    for subject, why in rule.withdrawn_at_end(ctx, name, mine):
                        out.extend(self.book.retract(rule.spec, name, subject, why, ctx.now))
            crash.lower_explained(self.book.all(), name)
            crash.lower_peer_lost(self.book.all(), self.sources)
            attempts.lower_earlier(self.book.all(), name)
            attempts.lower_ran_past(self.book.all(), name, ctx)
            attempts.name_attempts(self.book.all(), name)
            st = self.sources.get(name)
            attempts.lower_before_training(self.book.all(), name, st.step if st is not None else None)
            self._ended.add(name)
            self.book.refit(name)
        return self._tell(out)

    def _judge_held(self) -> list[AlertChange]:
        """The array rules judge the rows held since they last did. Each rule plans its transitions over
        its series' rows; the plans reach the book in the order the rows were fed (then series, then
        rule), as they did row by row, so inhibition between rules sees alerts fire in the log's order.
        The caller tells the listeners (with its own changes, in order)."""
        if not self._held:
            return []
        held, self._held = self._held, {}
        self._held_rows = self._held_most = 0
        plans: list[tuple[int, int, int, int, Planned]] = []
        for k, h in enumerate(held.values()):
            h.series.judged()
            if not h.now:  # a series no array rule watches: only counted
                continue
            now = np.concatenate(h.now) if len(h.now) > 1 else h.now[0]
            src = h.series.source
            windows: dict[int, Window] = {}  # one per look-back: the rules of a series share it
            for r, rule in enumerate(self._arrays[h.series.name]):
                if self._off(rule, src):
                    continue
                try:
                    w = windows.get(rule.history)
                    if w is None:
                        w = windows[rule.history] = Window.of(h.series, h.n, rule.history)
                    made = self._plan(rule, w, now)
                except Exception as exc:  # see `_broke`
                    self._broke(rule, src, exc)
                    continue
                for n, planned in enumerate(made):
                    plans.append((h.seq_at(planned.row), k, r, n, planned))
        plans.sort(key=lambda p: p[:4])
        out: list[AlertChange] = []
        for *_, planned in plans:
            if self._off(planned.rule, planned.w.source):
                continue
            try:
                out.extend(self._apply(planned))
            except Exception as exc:  # see `_broke`
                self._broke(planned.rule, planned.w.source, exc)
        self._give_back_room(held)
        return out

    def _give_back_room(self, held: dict[tuple[str, str], HeldRows]) -> None:
        """Once a round is done: series whose arrays grew for a long run of rows give the room back when
        the round filled little of it, or left them alone (`Series.give_back_room`)."""
        judged = {h.series for h in held.values()}
        for s in self._roomy - judged:
            s.judged()
        for s in self._roomy | judged:
            s.give_back_room()
        self._roomy = {s for s in judged if s.roomy}

    def _plan(self, rule: ArrayRule, w: Window, now: np.ndarray) -> list[Planned]:
        """The rule's conditions over the window's new rows, run through the life cycle (up to each
        withdrawal, then afresh): what the book is to be told, row by row. Findings are made here, where
        an episode begins."""
        ctx = self._ctx
        ctx.now = float(now[-1])
        cond = np.asarray(rule.condition(ctx, w), dtype=bool)
        out: list[Planned] = []
        lo = 0
        for at, reason in rule.retractions(ctx, w):
            row = at - w.start
            out.extend(self._cycle(rule, w, cond, now, lo, row + 1))
            out.append(Planned(rule, w, cond, now, row, Step.RETRACTED, reason=reason))
            self.book.restart(rule.spec, w.source, w.name)
            lo = row + 1
        out.extend(self._cycle(rule, w, cond, now, lo, len(cond)))
        return out

    def _cycle(self, rule: ArrayRule, w: Window, cond: np.ndarray, now: np.ndarray, lo: int,
               hi: int) -> list[Planned]:
        """The alert life cycle over new rows [lo, hi), as planned transitions."""
        out: list[Planned] = []
        at = lo  # rows before `at` are accounted for
        for t in self.book.advance(rule.spec, w.source, w.name, cond[lo:hi], now[lo:hi]):
            row = lo + t.row
            f = None
            if t.step is Step.PENDING:  # the finding is made at the row the condition began to hold
                f = rule.finding(self._ctx, w, w.start + row)
                f.source = f.source or w.source
                f.step = f.step if f.step is not None else int(w.step[w.start + row])
                f.line = f.line or int(w.line[w.start + row])
                f.step_inferred = f.step_inferred or bool(w.inferred[w.start + row])
                f.subject = f.subject or w.name
            out.append(Planned(rule, w, cond, now, row, t.step, finding=f, held_from=at))
            at = row + 1
        if at < hi and self.book.active(rule.spec, w.source, w.name):
            out.append(Planned(rule, w, cond, now, hi - 1, None, held_from=at))
        return out

    def _apply(self, p: Planned) -> list[AlertChange]:
        """Has the book record one planned transition (None: the rows held at the end of the round)."""
        spec, source, subject = p.rule.spec, p.w.source, p.w.name
        t = float(p.now[p.row])
        step = p.step
        held = None
        if step is None or step is Step.FIRING:
            held = self._held_since(p, p.row + 1)
        elif step is Step.RESOLVED or step is Step.DROPPED:
            held = self._held_since(p, p.row)
        changes = self.book.enact(spec, source, subject, step, t, finding=p.finding, held=held, reason=p.reason)
        if step is Step.RESOLVED:
            self._why_stopped(p.rule, p.w, p.w.start + p.row)
        return changes

    def _why_stopped(self, rule: Rule, w: Window, row: int) -> None:
        """The alert of `rule` on `w`'s series resolved at `row`: said as stopped when it did not recover,
        because its metric went non-finite or because the rule's moving baseline caught up with a level
        that never came back (`JudgesRecovery`). The same reading for row rules and array rules."""
        spec, source, subject = rule.spec, w.source, w.name
        value = float(w.value[row])
        if not math.isfinite(value):
            self.book.stopped(spec, source, subject, _nonfinite(subject, value, int(w.step[row])))
            return
        finding = self.book.finding_of(spec, source, subject)
        if finding is None or not isinstance(rule, JudgesRecovery):
            return
        why = rule.unrecovered(w, row, finding.evidence)
        if why:
            self.book.stopped(spec, source, subject, why)

    def _held_since(self, p: Planned, hi: int) -> Held | None:
        """The rows in [p.held_from, hi) where the condition held, as the book counts them."""
        lo = p.held_from
        if hi <= lo:
            return None
        hits = np.flatnonzero(p.cond[lo:hi])
        if not len(hits):
            return None
        last = lo + int(hits[-1])
        row = p.w.start + last
        return Held(len(hits), int(p.w.step[row]), p.rule.last_value(p.w, row), float(p.now[last]))

    def failures(self, source: str, start: int = 0) -> list[str]:
        """The rules that failed on `source` (or on every source), from the `start`-th failure on."""
        return [text for src, text in self.rule_errors[start:] if src in (source, ANY)]

    def _off(self, rule: Rule, source: str) -> bool:
        return bool(self._broken) and ((rule.spec.id, source) in self._broken or (rule.spec.id, ANY) in self._broken)

    def _broke(self, rule: Rule, source: str, exc: Exception) -> None:
        """A rule that raised on a log is switched off for that log and said once, in words. Log text is
        untrusted: a rule meeting a shape of data it was not written for must cost that rule on that
        log, never the watch, its other rules or its other logs."""
        key = (rule.spec.id, source)
        if key in self._broken:
            return
        self._broken.add(key)
        what = f"{type(exc).__name__}: {exc}"[:200]
        self.rule_errors.append((source, f"rule {rule.spec.id} failed on this log and is off for it ({what}); "
                                         "its findings here may be missing"))


def _nonfinite(name: str, value: float, step: int | None) -> str:
    """Why an alert stopped without recovering. The step is left out: a row rule and its array form stop
    at different rows of the same run of non-finite values, and either would read as where it began."""
    what = "NaN" if value != value else "Inf" if value > 0 else "-Inf"
    return f"{name} went {what}"


class Gate:
    """One row rule over one metric's rows in a stretch: the rows it must see, and how far it has got
    (rows before `done` were shown to it or absorbed)."""

    __slots__ = ("done", "rule", "show")

    def __init__(self, rule: Rule, show: np.ndarray) -> None:
        self.rule = rule
        self.show = show
        self.done = 0


@dataclass(slots=True)
class Planned:
    """One thing an array rule's life cycle tells the book, at new row `row` of window `w`."""

    rule: ArrayRule
    w: Window
    cond: np.ndarray
    now: np.ndarray
    row: int
    step: Step | None  # None: still pending or firing at the round's end (the rows held are counted)
    finding: Finding | None = None  # PENDING: made at its row
    reason: str = ""  # RETRACTED: why
    held_from: int = 0  # FIRING, RESOLVED and None count the rows held from here
