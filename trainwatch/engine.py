"""The engine: records in, alerts out. Plain synchronous Python, no threads, no UI, no wall clock.

Sources and adapters hand it batches (`feed_batch`: a block of a log's backlog, a few live lines; `feed`
and `feed_all` make batches of records); a live driver also calls `tick` on its timer so time-based
rules (the stall detector) can judge silence. Between two events that rules answer, a batch's rows
are settled and stored a stretch at a time and judged by the array rules together; row rules see
only the rows their gate lets through, each with the store as it was at that row. Time comes from
the injected clock, so tests run hours of simulated time instantly.
"""

from __future__ import annotations

import fnmatch
import re
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from trainwatch import attempts
from trainwatch.alerts import AlertBook, AlertChange, Held
from trainwatch.batch import NO_STEP, Batch, BatchBuilder, from_records
from trainwatch.config import Config, RuleSpec
from trainwatch import incident
from trainwatch.grouping import group_rows
from trainwatch.lifecycle import Step
from trainwatch.model import (GPU_SOURCE, Alert, AlertState, Event, EventKind, Finding, Record, Retraction, Sample,
                              Severity)
from trainwatch.names import Canonicalizer, Quality, averaged
from trainwatch.plans import note as note_plan
from trainwatch.rules import build_rules, crash
from trainwatch.rules.array import ArrayRule, Window
from trainwatch.rules.base import Rule, RuleContext, SourceState
from trainwatch.rules.crash import crashed
from trainwatch.runconfig import RunConfig
from trainwatch.runconfig.fit import RunView
from trainwatch.runconfig.fit import fit as fit_fixes
from trainwatch.store import ROUND_ROWS, MetricStore, Series

Listener = Callable[[AlertChange], None]

WAIT_ROWS = 4 * ROUND_ROWS
"""Rows of all series together that may wait for a backlog's next block (`feed_batch(more=True)`), so
that a round spans blocks: a JSON-lines block of 2 MiB holds some 15,000 rows of each of a few series,
and judging two blocks in one round cut `check`'s time by a tenth. Each waiting row stays in its series'
arrays, so the bound is on all series together (a few megabytes): bounded per series, a log of hundreds
of metrics held tens of megabytes more (a 303-metric log peaked at 181 MB instead of 139)."""

ARRAY_FLUSH = ROUND_ROWS
"""New rows of any one series stored before the array rules judge those held (a round): a batch larger
than this is judged in pieces, so the history a rule declared, and the rows of every other series logged
before a row judged, are still among the rows the store keeps (store.KEPT_ROWS). Why this size: see
store.ROUND_ROWS."""
MAX_SERIES_PER_SOURCE = 2_000
"""Metric names kept per log. A log that prints a value per token, per sample or per class can hold
hundreds of thousands of names, each a series with its arrays and its rules: one with 1M names grew
to 7 GB. Past the cap only the names a rule watches by name (loss, grad_norm, the learning rate, ...)
are still kept; the others are counted and said once in the report."""
MAX_SERIES = 20_000
"""Metric names kept over all logs of one process (a glob of many runs), with the same exception."""
ADAMW_TRAINERS = frozenset({"hf_console", "trainer_state"})
"""Formats whose trainer uses AdamW unless told otherwise (the HF Trainer): an LR is judged against
AdamW's usual range when the log names no optimiser."""
ANY = "*"  # a rule switched off for every source (one that judges them all at once, on the clock)


class Engine:
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
        self._held: dict[tuple[str, str], _Held] = {}  # rows stored but not yet judged, per (source, metric)
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

    # -- input -----------------------------------------------------------------------------------

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
                       logged_lr=peak,
                       default_optimizer="adam" if adam else "")
        return fit_fixes(spec.family, fixes, view)

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
            return self.feed_batch(from_records(record.source, (record,)))
        return self._tell(self._judge_held()) + self._event(record)

    def feed_all(self, records: Iterable[Record], *, more: bool = False) -> list[AlertChange]:
        """Records in log order, of any sources: each run of one source's records goes in as one batch.

        `more`: as for `feed_batch`, the rows may wait for a later round (a live follower judges the rows
        of all its files in one round per its timer, not one per file per write)."""
        out: list[AlertChange] = []
        builder: BatchBuilder | None = None
        for r in records:
            if builder is None or r.source != builder.source:
                if builder is not None:
                    out.extend(self._feed(builder.build()))
                builder = BatchBuilder(r.source)
            builder.record(r)
        if builder is not None:
            out.extend(self._feed(builder.build()))
        out.extend(self._end_of_feed(more))
        return out

    def feed_batch(self, batch: Batch, *, more: bool = False) -> list[AlertChange]:
        """A batch in log order: its rows between events are judged together by the array rules.

        `more`: more of the same backlog follows at once, so the rows held at the batch's end may wait
        and be judged with the next batch's in one round, as if the two were one batch (which changes no
        finding: tests/test_batching.py). A round still ends where it would inside a batch: at
        ARRAY_FLUSH rows of a series, before an event rules must see in order, and at `settle`, `finish`,
        `tick` (a live follower's held rows wait no longer than its timer) or anything fed without
        `more`; and the rows wait only while no series holds half a round, so a batch of many rows is
        not cut in two by a round's end, and while all series together hold fewer than WAIT_ROWS. A
        backlog read in blocks (BACKLOG_BLOCK) pays the rules' fixed cost per round of thousands of rows,
        not per block."""
        out = self._feed(batch)
        out.extend(self._end_of_feed(more))
        return out

    def _end_of_feed(self, more: bool) -> list[AlertChange]:
        """The rows held judged now, unless more follows and they may wait (see `feed_batch`)."""
        if not more or self._held_rows >= WAIT_ROWS or 2 * self._held_most >= ARRAY_FLUSH:
            return self.settle()
        return []

    @property
    def holding(self) -> bool:
        """Rows are stored that the array rules have not judged yet."""
        return bool(self._held)

    def settle(self) -> list[AlertChange]:
        """The rows still held judged now: after the last batch fed with `more`, when nothing is read
        after it (a backlog's end)."""
        return self._tell(self._judge_held())

    def _feed(self, batch: Batch) -> list[AlertChange]:
        if len(batch.redraws) and EventKind.PROGRESS in self._by_event:
            batch = batch.redraws_as_events()  # a rule answers redraws: each one is an event for it
        out: list[AlertChange] = []
        at = 0
        light: list[tuple[int, Event]] = []  # redraws that came as event objects, since the last event
        ranks = batch.redraws.rank
        r0 = 0
        for i, (pos, event) in enumerate(batch.events):
            if event.kind is EventKind.PROGRESS and event.kind not in self._by_event:
                light.append((i, event))  # a redraw: it moves the step, nothing answers it
                continue
            r1 = int(np.searchsorted(ranks, i, side="right")) if len(ranks) else 0
            if pos > at or light or r1 > r0:
                out.extend(self._rows(batch, at, pos, _Light.of(batch, light, r0, r1)))
                at, light, r0 = pos, [], r1
            if self._held and self._barrier(event):
                out.extend(self._tell(self._judge_held()))
            out.extend(self._event(event))
        if len(batch) > at or light or len(ranks) > r0:
            out.extend(self._rows(batch, at, len(batch), _Light.of(batch, light, r0, len(ranks))))
        return out

    def _barrier(self, e: Event) -> bool:
        """Whether the rows held must be judged before this event: rules answer it (their alerts keep the
        log's order, which inhibition depends on), or it tells facts (a banner, a new run in the same
        log) that array rules read as the source's: a row logged before the facts is judged without
        them, however large the round it is judged in."""
        return e.kind in self._by_event or e.kind is EventKind.ERROR or e.kind is EventKind.INFO

    # -- rows -------------------------------------------------------------------------------------

    def _rows(self, b: Batch, lo: int, hi: int, light: _Light | None) -> list[AlertChange]:
        """Rows [lo, hi) of a batch and the progress redraws among them. The source's step, phase and
        clock are settled over the whole stretch at once; the rows go into the store a series at a time
        and are held for the array rules. Only a row that a row rule must see (its gate) stops the
        stretch, so the rule sees the store as it was at that row."""
        n = hi - lo
        src = b.source
        state = self.sources.get(src) or self.source(src)
        ids, order, starts = group_rows(b.name[lo:hi], self._metric_ids(b), len(self._names))
        value, line, t = b.value[lo:hi], b.line[lo:hi], b.time[lo:hi]
        now, step, inferred = self._settle(state, ids, b.step[lo:hi], b.inferred[lo:hi], t, lo, light)
        if not n:
            return []
        seq0 = self._seq  # row j of the stretch is the (seq0 + j)-th row fed
        self._seq += n
        present = np.flatnonzero(starts[1:] > starts[:-1]).tolist()
        if self._dropped is not None and self._dropped in present:  # names past the caps: counted, not kept
            present.remove(self._dropped)
        rows_of = {k: order[starts[k]:starts[k + 1]] for k in present}
        for k in sorted(present, key=lambda k: int(rows_of[k][0])):
            # made in the order the log first gives them (the report lists them so), not the gated ones
            # first: the order must not depend on where a backlog's blocks were cut
            self.store.series(src, self._names[k])
        picked: dict[int, tuple[np.ndarray, np.ndarray]] = {}

        def pick(k: int) -> tuple[np.ndarray, np.ndarray]:
            """Steps and values of metric k's rows in the stretch, gathered once for every row rule (so
            read-only: no rule may change what the next one reads)."""
            got = picked.get(k)
            if got is None:
                got = picked[k] = (step[rows_of[k]], value[rows_of[k]])
                for a in got:
                    a.flags.writeable = False
            return got

        gates = self._gates(src, present, rows_of, pick)
        stop = np.zeros(n, dtype=bool)
        for k, gs in gates.items():
            for g in gs:
                stop[rows_of[k][g.show]] = True
        stops = np.flatnonzero(stop)
        out: list[AlertChange] = []
        pos = 0
        while pos < n:
            end = n
            s = int(stops.searchsorted(pos))
            if s < len(stops):
                end = int(stops[s]) + 1
            end, full = self._flush_cut(src, rows_of, pos, end)
            for k in present:
                rows = rows_of[k]
                a, z = rows.searchsorted((pos, end)).tolist()
                if a == z:
                    continue
                sel = rows[a:z]
                name = self._names[k]
                series = self.store.series(src, name)
                series.extend_rows(sel, step, value, line, t, inferred)
                held = self._held.get((src, name))
                if held is None:
                    held = self._held[(src, name)] = _Held(series)
                held.n += z - a  # counted for every series: none may move on by more than a round
                self._held_rows += z - a
                self._held_most = max(self._held_most, held.n)
                if self._arrays[name]:
                    held.seq.append((seq0, sel))
                    held.now.append(now[sel])
            if full:
                out.extend(self._tell(self._judge_held()))
            last = end - 1
            if stop[last]:
                k = int(ids[last])
                rows = rows_of[k]
                j = int(rows.searchsorted(last))
                out.extend(self._row_rules(src, self._names[k], float(now[last]), gates[k], j, *pick(k)))
                more = [g for g in gates[k] if not g.show[j + 1:].all() and not self._still_gated(g, src, k)]
                if more:
                    for g in more:
                        g.show[j + 1:] = True
                    stop[rows[j + 1:]] = True
                    stops = np.flatnonzero(stop)
            pos = end
        for k, gs in gates.items():
            rows = rows_of[k]
            series = self.store.series(src, self._names[k])
            for g in gs:
                if g.done < len(rows) and not self._off(g.rule, src):
                    k_step, k_value = pick(k)
                    try:
                        g.rule.absorb(self._ctx, series, k_step[g.done:], k_value[g.done:])
                    except Exception as exc:  # see `_broke`
                        self._broke(g.rule, src, exc)
        return out

    def _gates(self, src: str, present: list[int], rows_of: dict[int, np.ndarray],
               pick: Callable[[int], tuple[np.ndarray, np.ndarray]]) -> dict[int, list[_Gate]]:
        """For each metric of the stretch that row rules watch, the rows each rule must see (`pick`: a
        metric's steps and values in the stretch)."""
        out: dict[int, list[_Gate]] = {}
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
                gs.append(_Gate(rule, np.ones(len(rows), dtype=bool) if show is None else np.asarray(show, bool)))
            out[k] = gs
        return out

    def _still_gated(self, g: _Gate, src: str, k: int) -> bool:
        return g.rule.gated(src) and not self.book.tracks(g.rule.spec.id, src, self._names[k])

    def _metric_ids(self, b: Batch) -> np.ndarray:
        """Engine metric ids for the batch's name table; a name seen for the first time gets its rules,
        unless it is past the caps (MAX_SERIES_PER_SOURCE, MAX_SERIES): then its rows are not kept."""
        known = self._ids_of.setdefault(b.source, {})
        out = np.empty(len(b.names), dtype=np.int64)
        for i, raw in enumerate(b.names):
            k = known.get(raw)
            if k is None:
                k = known[raw] = self._admit(b.source, self._own_name(known, raw))
            out[i] = k
        return out

    def _own_name(self, known: dict[str, int], raw: str) -> str:
        """The canonical name of `raw`, unless it is an average over steps (names.averaged) whose canonical
        name another raw name of the same log already holds: an epoch's mean loss printed after its batch
        losses is its own series, so the loss series, its steps and its "final" value stay per-step."""
        name = self.canon(raw)
        if name != raw and averaged(raw) and any(
                r != raw and k < len(self._names) and self._names[k] == name for r, k in known.items()):
            return raw
        return name

    def _admit(self, source: str, name: str) -> int:
        k = self._metric.get(name)
        kept = self._kept.get(source, 0)
        if (kept >= MAX_SERIES_PER_SOURCE or (k is None and len(self._names) >= MAX_SERIES)) \
                and not self._named_by_rules(name):
            self.dropped_names[source] = self.dropped_names.get(source, 0) + 1
            if self._dropped is None:
                self._dropped = self._new_metric("\x00past the cap", [])
            return self._dropped
        self._kept[source] = kept + 1
        return k if k is not None else self._new_metric(name, self._rules_for(name))

    def _new_metric(self, name: str, rules: list[Rule]) -> int:
        k = self._metric[name] = len(self._names)
        self._names.append(name)
        self.judged.update(r.spec.id for r in rules)
        self._arrays[name] = [r for r in rules if isinstance(r, ArrayRule)]
        self._hooks[name] = [(r, r.spec, r.spec.id) for r in rules if not isinstance(r, ArrayRule)]
        self._hooked = np.append(self._hooked, bool(self._hooks[name]))
        self._is_eval = np.append(self._is_eval, name.startswith("eval_"))
        return k

    def _named_by_rules(self, name: str) -> bool:
        """A rule watches this name by name or by a pattern narrower than everything."""
        if self._watched is None:
            patterns = {p for r in self.rules for p in r.watches if p != "*"}
            globs = [fnmatch.translate(p) for p in patterns if "*" in p or "?" in p or "[" in p]
            self._watched = (patterns, re.compile("|".join(globs)) if globs else None)
        names, globbed = self._watched
        return name in names or (globbed is not None and globbed.match(name) is not None)

    def cap_notes(self, source: str) -> list[str]:
        """What the caps cost a source, said once in its report."""
        n = self.dropped_names.get(source, 0)
        if not n:
            return []
        return [f"{n} metric names past the cap of {MAX_SERIES_PER_SOURCE} per log ({MAX_SERIES} in all) were "
                "not kept; every name a rule watches was"]

    def _settle(self, state: SourceState, ids: np.ndarray, given: np.ndarray, inferred: np.ndarray,
                t: np.ndarray, lo: int, light: _Light | None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The clock at each row, each row's step (the source's current one where the log printed none,
        then marked inferred) and the source's step, phase and progress time after the stretch, as
        feeding the rows and redraws one at a time would leave them."""
        n = len(given)
        if light is not None:  # rows and redraws in log order: a redraw at position p comes before row p
            order = np.argsort(np.concatenate((2 * np.arange(lo, lo + n) + 1, 2 * light.pos)), kind="stable")
            m_step = np.concatenate((given, light.step))[order]
            m_time = np.concatenate((t, light.time))[order]
            is_row = order < n
        else:
            m_step, m_time, is_row, order = given, t, None, None
        now = self._clock_over(state, m_time)
        explicit = m_step != NO_STEP
        before = state.step
        every = bool(explicit.all())  # every row printed its step (JSON lines): nothing to carry forward
        at = None if every else np.flatnonzero(explicit)  # (None: all of them)
        k = len(m_step) if at is None else len(at)
        if k:
            steps = m_step if at is None else m_step[at]
            change = np.empty(k, dtype=bool)
            change[1:] = steps[1:] != steps[:-1]
            change[0] = before is None or int(steps[0]) != before
            moved = bool(change.any())
            last = k - 1 - int(np.argmax(change[::-1])) if moved else -1  # (among the rows with a step)
            if state.phase != "train":
                if is_row is None:
                    m_eval = self._is_eval[ids]
                else:
                    assert order is not None
                    m_eval = np.zeros(len(order), dtype=bool)
                    m_eval[is_row] = self._is_eval[ids[order[is_row]]]
                ev = m_eval if at is None else m_eval[at]
                flips = change | ~ev if is_row is None else change | ((is_row if at is None else is_row[at]) & ~ev)
                if flips.any():
                    last = max(last, int(np.argmax(flips)))
                    state.phase = "train"
            if last >= 0:
                state.last_progress_at = float(now[last if at is None else int(at[last])])
            state.step = int(steps[-1])
            if moved:
                state.phase = "train"
            if at is None:
                filled = m_step
            else:
                fill = np.maximum.accumulate(np.where(explicit, np.arange(len(m_step)), -1))
                filled = np.where(fill >= 0, m_step[np.maximum(fill, 0)], before if before is not None else 0)
        else:
            filled = np.full(len(m_step), before if before is not None else 0, dtype=np.int64)
        if light is not None:
            assert order is not None and is_row is not None
            state.events += len(light.pos)
            totals = np.flatnonzero(light.total > 0)
            if len(totals):
                state.total_steps = light.total_of(int(totals[-1]))
            if light.objects:
                prev = np.concatenate(([before if before is not None else NO_STEP], filled[:-1]))
                redraw_at = np.flatnonzero(~is_row)  # the k-th redraw's place among rows and redraws
                for k, e in light.objects:
                    j = int(redraw_at[k])
                    self._redraw(state, e, int(prev[j]) if prev[j] != NO_STEP else None)
            rows = np.empty(n, dtype=np.int64)
            rows[order[is_row]] = np.flatnonzero(is_row)
            now, filled, explicit = now[rows], filled[rows], explicit[rows]
        return now, filled, inferred if every else inferred | ~explicit

    def _redraw(self, state: SourceState, e: Event, step_before: int | None) -> None:
        """What a redraw that came as an event object leaves besides the step, its total and the count
        (`_settle` takes those from every redraw): its time, its step where it had none, the last line."""
        if e.time is not None:
            state.timed = True
        if e.step is None:
            e.step = step_before
        if e.text:
            state.last_line = e.text.splitlines()[-1] if "\n" in e.text else e.text

    def _clock_over(self, state: SourceState, times: np.ndarray) -> np.ndarray:
        """The injected clock as each row is fed: a clock that follows the log's time (check's) sees each
        row's own time, in order; any other clock is read once."""
        timed = ~np.isnan(times)
        if not timed.any():
            return np.full(len(times), self.clock(), dtype=np.float64)
        state.timed = True
        if self._seen is None:
            return np.full(len(times), self.clock(), dtype=np.float64)
        seen_all = getattr(self.clock, "seen_all", None)
        if seen_all is not None:
            return np.asarray(seen_all(times), dtype=np.float64)
        out = np.empty(len(times), dtype=np.float64)
        for i, v in enumerate(times.tolist()):
            if v == v:
                self._seen(v)
            out[i] = self.clock()
        return out

    def _flush_cut(self, src: str, rows_of: dict[int, np.ndarray], pos: int, end: int) -> tuple[int, bool]:
        """Where the stretch [pos, end) must stop so no series of the source takes more than ARRAY_FLUSH
        rows before the array rules judge (the rows before a row judged, in its series and in any other a
        rule reads, must still be kept by the store), and whether it reached that."""
        cut, full = end, False
        for k, rows in rows_of.items():
            held = self._held.get((src, self._names[k]))
            room = ARRAY_FLUSH - (held.n if held is not None else 0)
            a, z = rows.searchsorted((pos, end)).tolist()
            if z - a >= room:
                at = int(rows[a + room - 1]) + 1
                if at <= cut:
                    cut, full = at, True
        return cut, full

    def _row_rules(self, source: str, name: str, now: float, gates: list[_Gate], j: int, step: np.ndarray,
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
                    if not math.isfinite(point.value):
                        self.book.stopped(spec, source, name, _nonfinite(name, point.value, point.step))
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
        elif e.kind is EventKind.PLAN:
            note_plan(state, e)
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

    # -- time and the end of data -------------------------------------------------------------

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
                                               ctx.now, one_shot=True))
            for rule in self.rules:
                if not self._off(rule, name):
                    rule.lower_at_end(ctx, name, [a for a in self.book.all() if a.rule == rule.spec.id])
            crash.lower_explained(self.book.all(), name)
            attempts.lower_earlier(self.book.all(), name)
            self._ended.add(name)
            self.book.refit(name)
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
        self._held_rows = self._held_most = 0
        plans: list[tuple[int, int, int, int, _Planned]] = []
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

    def _give_back_room(self, held: dict[tuple[str, str], _Held]) -> None:
        """Once a round is done: series whose arrays grew for a long run of rows give the room back when
        the round filled little of it, or left them alone (`Series.give_back_room`)."""
        judged = {h.series for h in held.values()}
        for s in self._roomy - judged:
            s.judged()
        for s in self._roomy | judged:
            s.give_back_room()
        self._roomy = {s for s in judged if s.roomy}

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

    def _plan(self, rule: ArrayRule, w: Window, now: np.ndarray) -> list[_Planned]:
        """The rule's conditions over the window's new rows, run through the life cycle (up to each
        withdrawal, then afresh): what the book is to be told, row by row. Findings are made here, where
        an episode begins."""
        ctx = self._ctx
        ctx.now = float(now[-1])
        cond = np.asarray(rule.condition(ctx, w), dtype=bool)
        out: list[_Planned] = []
        lo = 0
        for at, reason in rule.retractions(ctx, w):
            row = at - w.start
            out.extend(self._cycle(rule, w, cond, now, lo, row + 1))
            out.append(_Planned(rule, w, cond, now, row, Step.RETRACTED, reason=reason))
            self.book.restart(rule.spec, w.source, w.name)
            lo = row + 1
        out.extend(self._cycle(rule, w, cond, now, lo, len(cond)))
        return out

    def _cycle(self, rule: ArrayRule, w: Window, cond: np.ndarray, now: np.ndarray, lo: int,
               hi: int) -> list[_Planned]:
        """The alert life cycle over new rows [lo, hi), as planned transitions."""
        out: list[_Planned] = []
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
            out.append(_Planned(rule, w, cond, now, row, t.step, finding=f, held_from=at))
            at = row + 1
        if at < hi and self.book.active(rule.spec, w.source, w.name):
            out.append(_Planned(rule, w, cond, now, hi - 1, None, held_from=at))
        return out

    def _apply(self, p: _Planned) -> list[AlertChange]:
        """Has the book record one planned transition (None: the rows held at the end of the round)."""
        spec, source, subject = p.rule.spec, p.w.source, p.w.name
        t = float(p.now[p.row])
        step = p.step
        held = None
        if step is None or step is Step.FIRING:
            held = self._held_since(p, p.row + 1)
        elif step is Step.RESOLVED:
            held = self._held_since(p, p.row)
        changes = self.book.enact(spec, source, subject, step, t, finding=p.finding, held=held, reason=p.reason)
        if step is Step.RESOLVED:  # a metric that went non-finite stopped, it did not recover
            at = p.w.start + p.row
            value = float(p.w.value[at])
            if not math.isfinite(value):
                self.book.stopped(spec, source, subject, _nonfinite(subject, value, int(p.w.step[at])))
        return changes

    def _held_since(self, p: _Planned, hi: int) -> Held | None:
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

    def _tell(self, changes: list[AlertChange]) -> list[AlertChange]:
        if changes:
            self.changes += len(changes)
            if self.listeners and any(c.state is AlertState.FIRING and c.alert.rule in incident.CHAIN
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

    # -- views ------------------------------------------------------------------------------------

    def alerts(self, *, inhibited: bool = True) -> list[Alert]:
        """Every alert that fired, most severe first, then by step. With `inhibited=False`, only those
        told to the sinks: an alert that inhibition kept quiet all along (an echo of its cause) is left
        out, so a report says what a live follower said."""
        self.fold_incidents()
        found = self.book.all() if inhibited else (a for a in self.book.all() if a.told and not a.retracted)
        return incident.ordered(found)

    def fold_incidents(self) -> None:
        """Folds each optimisation blow-up's chain into its root (trainwatch/incident.py); again is a no-op."""
        incident.fold(list(self.book.all()), self.store)

    def worst(self) -> Severity | None:
        self.fold_incidents()
        worst = None
        for a in self.book.all():
            if a.severity > Severity.INFO and not a.retracted and (worst is None or a.severity > worst):
                worst = a.severity
        return worst


def _nonfinite(name: str, value: float, step: int | None) -> str:
    """Why an alert stopped without recovering. The step is left out: a row rule and its array form stop
    at different rows of the same run of non-finite values, and either would read as where it began."""
    what = "NaN" if value != value else "Inf" if value > 0 else "-Inf"
    return f"{name} went {what}"


class _Gate:
    """One row rule over one metric's rows in a stretch: the rows it must see, and how far it has got
    (rows before `done` were shown to it or absorbed)."""

    __slots__ = ("done", "rule", "show")

    def __init__(self, rule: Rule, show: np.ndarray) -> None:
        self.rule = rule
        self.show = show
        self.done = 0


class _Held:
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


@dataclass(slots=True)
class _Planned:
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


@dataclass
class _Light:
    """The progress redraws of a stretch of rows, in log order, as columns: those the batch had as columns
    and those that came as event objects (`objects`: their index here, and the event)."""

    pos: np.ndarray  # samples of the batch before it
    step: np.ndarray  # NO_STEP where it gave none
    time: np.ndarray  # NaN where it gave none
    total: np.ndarray  # 0 or less where it gave none; 1 for an object with one (`total_of` reads it)
    objects: list[tuple[int, Event]]

    def total_of(self, j: int) -> int:
        """The total of redraw j: an object's from the object, as the log printed it (log text may hold
        a total no int64 holds)."""
        for k, e in reversed(self.objects):  # in ascending k
            if k == j:
                return e.fields["total"]
            if k < j:
                break
        return int(self.total[j])

    @classmethod
    def of(cls, b: Batch, events: list[tuple[int, Event]], r0: int, r1: int) -> _Light | None:
        """The redraws b.redraws[r0:r1] and the redraw events (index in b.events, event) among them."""
        if not events and r1 == r0:
            return None
        red = b.redraws
        pos, step, total = red.pos[r0:r1], red.step[r0:r1], red.total[r0:r1]
        time = np.full(r1 - r0, math.nan)
        if not events:
            return cls(pos, step, time, total, [])
        ints = [(e.fields.get("step"), e.fields.get("total")) for _, e in events]
        e_pos = np.array([b.events[i][0] for i, _ in events], dtype=np.int64)
        e_step = np.array([s if type(s) is int else NO_STEP for s, _ in ints], dtype=np.int64)
        e_total = np.array([1 if isinstance(t, int) and t > 0 else 0 for _, t in ints], dtype=np.int64)
        e_time = np.array([math.nan if e.time is None else e.time for _, e in events], dtype=np.float64)
        # a column redraw of rank r comes before the batch's event r: merge by those places
        order = np.argsort(np.concatenate((2 * red.rank[r0:r1], 2 * np.array([i for i, _ in events]) + 1)),
                           kind="stable")
        where = np.empty(len(order), dtype=np.int64)
        where[order] = np.arange(len(order))
        k = r1 - r0
        objects = [(int(where[k + j]), e) for j, (_, e) in enumerate(events)]
        return cls(np.concatenate((pos, e_pos))[order], np.concatenate((step, e_step))[order],
                   np.concatenate((time, e_time))[order], np.concatenate((total, e_total))[order], objects)
