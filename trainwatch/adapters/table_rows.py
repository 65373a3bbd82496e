"""Runs of plain table rows, read from the bytes as arrays: the template reader's table shape at speed.

A space-aligned metrics table under a header row (`epoch  iter  loss  lr`) is mostly rows of numbers
only, one a line. Read line by line, each row costs the template reader's whole cascade of shapes
(about 20 us), so a table log read at 2.5 MB/s. Here a run of consecutive rows that the cascade can
only read one way (numbers and blanks, as many cells as the header, counters that give the step) is
read from the bytes in one pass of a native kernel (`kernels.table_cells`; its reference is a regular
expression and numpy's parse, about 3x faster than the line path, no more); the reader's
state then moves as reading the rows one by one would have moved it (`TemplateAdapter.read_rows`).

Anything else stops a run and goes through the line path: a `%`, a `nan.0`, a `\\r`, a row of a
different width, a counter that is not a finite number a float holds exactly, a header whose names
the reader renames by their values (`total`), or a reader in a state where a row means more than its
cells (a boxed table, a Rich bar's wrapped lines).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from trainwatch.adapters import shapes
from trainwatch.adversarial import generator_as_loss
from trainwatch.scan import kernels

EXACT = 2.0 ** 53  # a counter a float holds exactly: its int is the one `int(float(cell))` gives


@dataclass(frozen=True)
class RowPlan:
    """How rows under one header are read: which cells are counters, which are metrics."""

    width: int
    kept: np.ndarray
    """The metric columns, in header order."""
    names: list[str]
    counters: np.ndarray
    """Every counter column (all must be finite for a row to be read here)."""
    inner: int
    """The column that gives the step: the finest counter."""
    epoch: int
    """The epoch column when the inner counter is finer than it, else -1."""
    by_epoch: bool
    """The inner counter is the epoch itself."""


class Rows(NamedTuple):
    """What a run of rows gave: its samples row by row (`value` is rows x names)."""

    taken: int
    names: list[str]
    step: np.ndarray
    value: np.ndarray
    line: np.ndarray
    inferred: np.ndarray


def plan_for(header: list[str]) -> RowPlan | None:
    """The plan of rows under `header`, or None when its rows are not all read alike (no counter: the step
    then depends on the lines around; a name the reader renames by value; a table of metrics as rows)."""
    if len(header) < 2:
        return None
    low = [h.lower() for h in header]
    if low[0].strip() in shapes.TRANSPOSED_HEADS:
        return None
    counters = [i for i, k in enumerate(low) if k in shapes.COUNTER_RANK]
    kept = [i for i, k in enumerate(low) if k not in shapes.COUNTER_RANK]
    if not counters or not kept or any(low[i] in shapes.TOTALS for i in kept):
        return None
    pairs = [(header[i], 1.0) for i in kept]
    if generator_as_loss(shapes.splits_as_loss(shapes.letter_as_loss(pairs))) != pairs:
        return None  # a name that takes another (`L` beside `L_ce`) or a loss made of others
    ranked = sorted(counters, key=lambda i: shapes.COUNTER_RANK[low[i]])  # stable: header order among equals
    inner = ranked[0]
    by_epoch = low[inner] in shapes.EPOCH_NAMES
    epoch = -1 if by_epoch else next((i for i in ranked if low[i] in shapes.EPOCH_NAMES), -1)
    return RowPlan(len(header), np.array(kept, dtype=np.int64), [header[i] for i in kept],
                   np.array(counters, dtype=np.int64), inner, epoch, by_epoch)


def run_values(plan: RowPlan, data: bytes, start: int, end: int) -> np.ndarray | None:
    """The cells of the run of plain rows at data[start:end] (rows x width), cut before the first row
    whose counters are not finite numbers held exactly; None when the first row is not one."""
    values = kernels.table_cells(data, start, end, plan.width)
    if not len(values):
        return None
    counters = values[:, plan.counters]
    bad = ~(np.abs(counters) < EXACT).all(axis=1)  # NaN compares false: not finite is bad too
    if bad.any():
        cut = int(np.argmax(bad))
        if not cut:
            return None
        values = values[:cut]
    return values
