"""JSON lines read as columns: the rows of many lines at once, from the scanner's arrays.

A JSON-lines log is mostly lines of one shape, `{"step": 10, "loss": 2.3, "train": {"lr": 1e-4}}`, and
the scanner has already found every number in them. For the lines whose whole meaning those arrays
hold (plain JSON numbers, nested objects flattened as `_flatten` names them, no repeated key, no total,
no value a float cannot say exactly) this module decides, over whole arrays, which key is each line's
step, which its time and which are metrics, and hands the metrics to the batch as columns. The rules
are `JsonLinesAdapter._records`' own; anything they would treat specially (a step going backwards,
which may be an evaluation row) is left to that per-line path, so both always agree. A test checks
them against each other on generated logs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from trainwatch.adapters.spans import repeated_keys
from trainwatch.batch import INT64_MAX, NO_STEP
from trainwatch.scan import kernels

_INT64_MIN = -INT64_MAX - 1

if TYPE_CHECKING:
    from trainwatch.batch import BatchBuilder
    from trainwatch.scan import Chunk


class KeyTables:
    """What each key of the scanner's table means to the JSON-lines rules, as arrays indexed by key id
    (grown as the table grows): step key and its priority, time key, total key, its batch name id."""

    def __init__(self, step_keys: tuple[str, ...], time_keys: frozenset[str], total_keys: frozenset[str]) -> None:
        self._step_rank = {k: i for i, k in enumerate(step_keys)}
        self._time_keys = time_keys
        self._total_keys = total_keys
        self.known = 0
        self.rank = np.zeros(0, dtype=np.int64)  # priority among step keys; len(step_keys) if not one
        self.is_step = np.zeros(0, dtype=bool)
        self.is_time = np.zeros(0, dtype=bool)
        self.is_total = np.zeros(0, dtype=bool)
        self.name = np.zeros(0, dtype=np.int32)  # id in the batch builder's name table
        self.none = len(step_keys)

    def update(self, keys: list[str], out: BatchBuilder) -> None:
        if len(keys) == self.known:
            return
        new = keys[self.known:]
        self.rank = np.append(self.rank, [self._step_rank.get(k, self.none) for k in new])
        self.is_step = self.rank < self.none
        self.is_time = np.append(self.is_time, [k in self._time_keys for k in new])
        self.is_total = np.append(self.is_total, [k in self._total_keys for k in new])
        self.name = np.append(self.name, [out.name_id(k) for k in new]).astype(np.int32)
        self.known = len(keys)


def unsayable(chunk: Chunk, tables: KeyTables, dicts: np.ndarray, safe_int: float) -> np.ndarray:
    """For the given dicts: True where the arrays cannot say what `json` would load, because an entry is
    not finite, a key repeats, a total is printed (read only when it is an int) or a step is too large
    for a float to hold exactly."""
    bad = np.zeros(chunk.dict_line.shape[0], dtype=bool)
    key, value, owner = chunk.ent_key, chunk.ent_value, chunk.ent_dict
    wrong = ~np.isfinite(value) | tables.is_total[key] | (tables.is_step[key] & (np.abs(value) >= safe_int))
    bad[owner[wrong]] = True
    bad |= repeated_keys(owner, key, len(bad))
    return bad[dicts]


def layouts(chunk: Chunk, dicts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For the given dicts: a layout shared by dicts whose entry keys are the same sequence (the
    scanner's `dict_layout`, exact), and each layout's first dict (an index into `dicts`)."""
    if not len(dicts):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    _, first, layout = np.unique(chunk.dict_layout[dicts], return_index=True, return_inverse=True)
    return layout.reshape(-1), first


def emit_rows(chunk: Chunk, tables: KeyTables, dicts: np.ndarray, out: BatchBuilder,
              last_step: int | None) -> tuple[int, int | None]:
    """The samples of consecutive readable lines (their dicts `dicts`, consecutive) as columns, up to the
    first line whose step goes below the step before it (the per-line path decides what such a line
    is). Returns how many lines were emitted and the last step they set. The native extension does it in
    one pass without the GIL when it is in use (native/src/formats/rows.rs); `rows_reference` is its oracle."""
    e0, e1 = chunk.ent_dict.searchsorted((dicts[0], dicts[-1] + 1)).tolist()  # entries come sorted by dict
    key = chunk.ent_key[e0:e1]
    value = chunk.ent_value[e0:e1]
    row = chunk.ent_dict[e0:e1] - dicts[0]
    lineno = chunk.first_lineno + chunk.dict_line[dicts]
    got = None
    if last_step is None or _INT64_MIN <= last_step <= INT64_MAX:  # else: Python ints
        got = kernels.jsonl_rows(key, value, row, lineno, (tables.is_step, tables.rank, tables.is_time, tables.name),
                                 last_step)
    if got is not None:
        cols, take, last_step = got.columns, got.take, got.last_step
    else:
        ref = rows_reference(key, value, row, lineno, tables, last_step)
        cols, take, last_step = ref[:5], ref[5], ref[6]
    out.columns(*cols)
    return take, last_step


def rows_reference(key: np.ndarray, value: np.ndarray, row: np.ndarray, lineno: np.ndarray, tables: KeyTables,
                   last_step: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                                   int, int | None]:
    """`emit_rows` over numpy arrays, for entries `key`/`value` of dicts `row` (0..len(lineno), ascending)
    printed on lines `lineno`: the metric entries' name ids, steps, values, lines and times, how many
    rows were taken and the last step they set. Each row's step is its lowest-ranked step key
    (truncated), its time its first time key above 1e8 (milliseconds read as such); both are consumed,
    every other entry is a metric."""
    n = len(lineno)
    step = np.full(n, NO_STEP, dtype=np.int64)
    consumed = tables.is_step[key].copy()
    stepped = np.flatnonzero(consumed)
    if len(stepped):
        order = stepped[np.lexsort((tables.rank[key[stepped]], row[stepped]))]
        first = order[np.concatenate(([True], row[order][1:] != row[order][:-1]))]
        step[row[first]] = np.trunc(value[first]).astype(np.int64)
    when = np.full(n, np.nan)
    timed = np.flatnonzero(tables.is_time[key] & (value > 1e8))
    if len(timed):
        first = timed[np.concatenate(([True], row[timed][1:] != row[timed][:-1]))]
        t = value[first]
        when[row[first]] = np.where(t > 1e11, t / 1000.0, t)  # milliseconds since the epoch
        consumed[first] = True
    has = np.flatnonzero(step != NO_STEP)
    take = n
    if len(has):
        s = step[has]
        down = np.flatnonzero(s[1:] < s[:-1])
        if last_step is not None and s[0] < last_step:
            take = int(has[0])
        elif len(down):
            take = int(has[int(down[0]) + 1])
        before = has[has < take]
        if len(before):
            last_step = int(step[before[-1]])
    keep = ~consumed & (row < take)
    r = row[keep]
    return tables.name[key[keep]], step[r], value[keep], lineno[r], when[r], take, last_step
