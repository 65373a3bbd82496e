"""A source's progress over a stretch of rows: its step, phase and clock, settled for the whole stretch at
once as feeding the rows and progress redraws one at a time would leave them, and what an event tells
about its source."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from trainwatch.batch import NO_STEP, Batch
from trainwatch.engine.metrics import MetricIndex
from trainwatch.model import Event, EventKind
from trainwatch.plans import note as note_plan
from trainwatch.rules.base import SourceState


class Progress(MetricIndex):
    """Keeps each source's step, phase and clock (see the module)."""

    def _settle(self, state: SourceState, ids: np.ndarray, given: np.ndarray, inferred: np.ndarray,
                t: np.ndarray, lo: int, light: Light | None
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
                state.total_steps, state.total_counted = light.total_of(int(totals[-1])), True
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

    def _note_event(self, e: Event) -> float:
        """What an event tells about its source (its step, phase, total, facts, last line); the clock then."""
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
                state.total_steps, state.total_counted = total, True
            if isinstance(step, int) and step != state.step:
                state.step = step
                state.last_progress_at = now
                state.phase = "train"
        elif e.kind is EventKind.INFO:
            state.facts.update(e.fields)
            if e.fields.get("new_run"):  # another training starts in the same log: its curves start afresh
                self.store.drop_source(e.source)
                state.step = None
                state.restarts.append(e.line)
            total = e.fields.get("total_steps")
            if isinstance(total, int) and total > 0:
                state.total_steps, state.total_counted = total, True
        elif e.kind is EventKind.PLAN:
            note_plan(state, e)
            plan = state.plans.get("step")
            if plan is not None and not state.total_counted and e.fields.get("unit") == "step":
                state.total_steps = plan.total  # a setting in steps (MAX_ITER, max_steps) when nothing counts to one
        elif e.kind is EventKind.EVAL_START:
            state.phase = "eval"
        elif e.kind is EventKind.CHECKPOINT:
            state.phase = "checkpoint"
        elif e.kind is EventKind.TRAIN_END:
            state.ended = True
        if e.text:
            state.last_line = e.text.splitlines()[-1] if "\n" in e.text else e.text
        return now


@dataclass
class Light:
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
    def of(cls, b: Batch, events: list[tuple[int, Event]], r0: int, r1: int) -> Light | None:
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
