"""The round scheduler: how a batch's rows reach the rules.

A batch is cut at the events rules answer; the rows between are a stretch. A stretch's rows are stored a
series at a time and held for the array rules, and only a row that a row rule's gate shows it stops the
stretch, so that rule sees the store as it was at that row. The rows held are judged together (a round)
when a series holds a round's rows (ARRAY_FLUSH), before an event rules must see in order, before a row
rule changes the book, and at the end of a feed unless more of the same backlog follows and the rows
may wait (WAIT_ROWS)."""

from __future__ import annotations

import numpy as np

from trainwatch.alerts import AlertChange
from trainwatch.batch import Batch
from trainwatch.engine.dispatch import Dispatch
from trainwatch.engine.progress import Light
from trainwatch.engine.state import HeldRows
from trainwatch.grouping import group_rows
from trainwatch.model import Event, EventKind
from trainwatch.rules.base import SourceState
from trainwatch.store import ROUND_ROWS

WAIT_ROWS = 4 * ROUND_ROWS
"""Rows of all series together that may wait for a backlog's next block (`feed_batch(more=True)`). Why
wait: a block of a backlog holds fewer rows of a series than a round may take, and every array rule pays
a fixed cost per round, so rounds that span blocks pay it less often. Why all series together: each
waiting row stays in its series' arrays, so a bound per series would let a log of hundreds of metrics
hold hundreds of rounds' rows at once; a bound on the sum keeps the memory that waits to a few megabytes
whatever the number of metrics."""

ARRAY_FLUSH = ROUND_ROWS
"""New rows of any one series stored before the array rules judge those held (a round): a batch larger
than this is judged in pieces, so the history a rule declared, and the rows of every other series logged
before a row judged, are still among the rows the store keeps (store.KEPT_ROWS). Why this size: see
store.ROUND_ROWS."""

class Rounds(Dispatch):
    """Cuts batches into stretches and rounds (see the module)."""

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
                out.extend(self._rows(batch, at, pos, Light.of(batch, light, r0, r1)))
                at, light, r0 = pos, [], r1
            if self._held and self._barrier(event):
                out.extend(self._tell(self._judge_held()))
            out.extend(self._event(event))
        if len(batch) > at or light or len(ranks) > r0:
            out.extend(self._rows(batch, at, len(batch), Light.of(batch, light, r0, len(ranks))))
        return out

    def _barrier(self, e: Event) -> bool:
        """Whether the rows held must be judged before this event: rules answer it (their alerts keep the
        log's order, which inhibition depends on), or it tells facts (a banner, a new run in the same
        log) that array rules read as the source's: a row logged before the facts is judged without
        them, however large the round it is judged in."""
        return e.kind in self._by_event or e.kind is EventKind.ERROR or e.kind is EventKind.INFO

    def _rows(self, b: Batch, lo: int, hi: int, light: Light | None) -> list[AlertChange]:
        """Rows [lo, hi) of a batch and the progress redraws among them. The source's step, phase and
        clock are settled over the whole stretch at once; the rows go into the store a series at a time
        and are held for the array rules. Only a row that a row rule must see (its gate) stops the
        stretch, so the rule sees the store as it was at that row."""
        n = hi - lo
        src = b.source
        state = self.sources.get(src) or self.source(src)
        ids, order, starts = group_rows(b.name[lo:hi], self._metric_ids(b), len(self._names))
        value, line, t = b.value[lo:hi], b.line[lo:hi], b.time[lo:hi]
        before = state.step
        now, step, inferred = self._settle(state, ids, b.step[lo:hi], b.inferred[lo:hi], t, lo, light)
        if not n:
            return []
        _note_restarts(state, before, step, line)
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
                    held = self._held[(src, name)] = HeldRows(series)
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


def _note_restarts(state: SourceState, before: int | None, step: np.ndarray, line: np.ndarray) -> None:
    """The lines of a stretch where the step counter went back: each begins a new attempt."""
    prev = np.empty_like(step)
    prev[0] = step[0] if before is None else before
    prev[1:] = step[:-1]
    back = np.flatnonzero(step < prev)
    if len(back):
        state.restarts += line[back].tolist()
