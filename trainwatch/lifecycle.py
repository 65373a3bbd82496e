"""The alert life cycle over arrays: one boolean condition per row in, the few transitions out.

This is the only place an alert moves between inactive, pending and firing. A rule's verdicts for new
rows are a column saying whether its condition holds; this module turns that column into the rows where
an alert starts pending, fires, is dropped (it stopped holding before `for` was reached) or resolves (it
stopped holding for longer than `keep_firing_for`): `for` and `keep_firing_for` become run lengths over
the column (or spans of the row times, for durations in seconds). A row rule's verdict is a column of
one row (trainwatch.alerts.AlertBook.judge).

The Python loop runs once per transition, never once per row, so a gigabyte of healthy log costs a
few numpy passes. What is carried between batches (`Cycle`) is a handful of numbers, so any cutting
of the same rows into batches gives the same transitions: tests/rules/test_lifecycle.py proves it
against a row-at-a-time counter.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import numpy as np

from trainwatch.config import Duration


class Phase(enum.Enum):
    IDLE = "idle"  # nothing tracked (never held, dropped while pending, or resolved)
    PENDING = "pending"
    FIRING = "firing"


class Step(str, enum.Enum):
    PENDING = "pending"  # the condition began to hold at this row: the finding is made here
    FIRING = "firing"
    DROPPED = "dropped"  # stopped holding before `for` was reached
    RESOLVED = "resolved"
    RETRACTED = "retracted"  # the rule withdrew its finding: told by the rule, never made by `advance`


@dataclass(frozen=True, slots=True)
class Transition:
    row: int
    step: Step


@dataclass(slots=True)
class Cycle:
    """What one (rule, source, subject) carries from one batch to the next."""

    phase: Phase = Phase.IDLE
    active: int = 0  # rows the condition has held in a row (pending or firing)
    active_since: float = math.nan  # the time of the first of those rows
    inactive: int = 0  # rows it has not held in a row while firing
    inactive_since: float = math.nan


def _next(mask: np.ndarray, start: int) -> int:
    """The first index >= start where `mask` is true, or len(mask)."""
    if start >= len(mask):
        return len(mask)
    hit = np.flatnonzero(mask[start:])
    return start + int(hit[0]) if len(hit) else len(mask)


def _reach_row(run_start: int, run_end: int, carried: int, since: float, now: np.ndarray, d: Duration,
               strict: bool) -> int:
    """The first row in [run_start, run_end) where a run that began `carried` rows before run_start (at time
    `since`) has lasted `d` (rows counted inclusively, or seconds since `since`); run_end when none."""
    if d.seconds:
        target = since + d.seconds
        span = now[run_start:run_end]  # strict: elapsed > d; otherwise elapsed >= d
        pos = np.searchsorted(span, target, side="right") if strict else np.searchsorted(span, target, side="left")
        row = run_start + int(pos)
        return min(row, run_end)
    needed = max(d.steps + (1 if strict else 0), 1)
    row = run_start + max(needed - carried, 1) - 1
    return row if row < run_end else run_end


def advance(cycle: Cycle, cond: np.ndarray, now: np.ndarray, for_: Duration, keep: Duration) -> list[Transition]:
    """Runs the life cycle over one batch of rows; `now` is each row's time (non-decreasing).

    A pending run that breaks is dropped; a firing alert resolves once it has not held for more than
    `keep_firing_for` (at once when that is zero)."""
    m = len(cond)
    out: list[Transition] = []
    if not m:
        return out
    cond = np.asarray(cond, dtype=bool)
    off = ~cond
    p = 0
    while p < m:
        if cycle.phase is Phase.IDLE:
            s = _next(cond, p)
            if s >= m:
                break
            out.append(Transition(s, Step.PENDING))
            cycle.phase, cycle.active, cycle.active_since = Phase.PENDING, 0, float(now[s])
            p = s
        if cycle.phase is Phase.PENDING:
            e = _next(off, p)  # where the run breaks
            f = _reach_row(p, e, cycle.active, cycle.active_since, now, for_, strict=False)
            if f < e:
                out.append(Transition(f, Step.FIRING))
                cycle.phase, cycle.active = Phase.FIRING, cycle.active + (f - p + 1)
                cycle.inactive, cycle.inactive_since = 0, math.nan
                p = f + 1
                continue
            cycle.active += e - p
            if e >= m:
                break
            out.append(Transition(e, Step.DROPPED))
            cycle.phase, cycle.active, cycle.active_since = Phase.IDLE, 0, math.nan
            p = e + 1
            continue
        # firing
        if cycle.inactive == 0:
            k = _next(off, p)  # the first row it stops holding
            cycle.active += k - p
            if k >= m:
                break
            cycle.inactive_since = float(now[k])
            p = k
        g = _next(cond, p)  # where it holds again
        r = p if keep.zero else _reach_row(p, g, cycle.inactive, cycle.inactive_since, now, keep, strict=True)
        if r < g:
            out.append(Transition(r, Step.RESOLVED))
            cycle.phase, cycle.active, cycle.active_since = Phase.IDLE, 0, math.nan
            cycle.inactive, cycle.inactive_since = 0, math.nan
            p = r + 1
            continue
        cycle.inactive += g - p
        if g >= m:
            break
        cycle.inactive, cycle.inactive_since = 0, math.nan  # holds again while still firing
        p = g
    return out
