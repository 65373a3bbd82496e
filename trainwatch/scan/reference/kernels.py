"""The numpy (and bottleneck) answers of the native numeric kernels: what `trainwatch.scan.kernels` gives
when the native core is not in use (TRAINWATCH_SCANNER=reference, or no extension built), and the oracle
the native kernels are tested against. Each returns what its native twin returns, number for number."""

from __future__ import annotations

import re
from functools import lru_cache

import bottleneck as bn
import numpy as np


def count_byte(data: bytes, end: int, byte: int) -> int:
    """How many `byte`s data[:end] holds (numpy's byte compare: 5x faster than `bytes.count`)."""
    return int(np.count_nonzero(np.frombuffer(data, dtype=np.uint8, count=end) == byte))


# a table cell (native/src/kernels/table.rs): shapes.NUM less `nan.0` and a `%`
TABLE_CELL = rb"[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|NaN|inf|Inf)"


@lru_cache(maxsize=16)
def table_rows_pattern(width: int) -> re.Pattern[bytes]:
    """A run of whole lines of `width` cells each, blanks (spaces, tabs) before, between and after them."""
    return re.compile(rb"(?:[ \t]*" + TABLE_CELL + rb"(?:[ \t]+" + TABLE_CELL + rb"){%d}[ \t]*\n)+" % (width - 1))


def table_cells(data: bytes, start: int, end: int, width: int) -> tuple[np.ndarray, int]:
    """The cells of the run of plain table rows at data[start:end], row after row, and how many rows (each
    cell as `float` reads it: the pattern leaves only the forms it reads as the template reader does)."""
    m = table_rows_pattern(width).match(data, start, end) if width > 0 else None
    if m is None:
        return np.zeros(0), 0
    block = data[start:m.end()]
    return np.array(block.split(), dtype=np.float64), block.count(b"\n")


def group_rows(name: np.ndarray, table: np.ndarray, kinds: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row's metric id (`table[name]`), the rows in id order (stable), and where each id's rows start."""
    ids = table[name]
    order = np.argsort(ids, kind="stable")
    starts = np.concatenate(([0], np.cumsum(np.bincount(ids, minlength=kinds)))).astype(np.int64)
    return ids, order, starts


def fold_buckets(value: np.ndarray, finite: np.ndarray, size: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per whole bucket of `size` rows: least and greatest finite value, the finite values summed in row
    order, how many were finite."""
    n = len(value) // size
    v = value[:n * size].reshape(n, size)
    fin = finite[:n * size].reshape(n, size)
    only = np.where(fin, v, np.nan)
    addends = np.where(fin, v, -0.0)  # x + -0.0 == x, signed zeros included
    addends[:, 0] = np.where(fin[:, 0], v[:, 0], 0.0)  # a bucket that starts non-finite starts at 0.0
    with np.errstate(invalid="ignore", over="ignore"):  # sums past the largest float are inf, said nowhere
        lows = np.fmin.reduce(only, axis=1)
        highs = np.fmax.reduce(only, axis=1)
        totals = np.add.accumulate(addends, axis=1)[:, -1]
    return lows, highs, totals, fin.sum(axis=1)


def ema_path(ema: float, values: np.ndarray, windows: np.ndarray) -> np.ndarray:
    """The running smoothing `ema = ema + (v - ema) * 2.0 / k` after each row, as a Python loop gives it."""
    out = np.empty(len(values))
    for i, (v, k) in enumerate(zip(np.asarray(values, dtype=np.float64).tolist(), np.asarray(windows).tolist())):
        ema = ema + (v - ema) * 2.0 / k
        out[i] = ema
    return out


def span_medians(x: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The median of each span x[start:end] (NaN left out; NaN for an empty span), bottleneck's number."""
    out = np.full(len(start), np.nan)
    for j, (a, b) in enumerate(zip(start.tolist(), end.tolist())):
        if b > a:
            out[j] = bn.move_median(x[a:b], window=b - a, min_count=1)[-1]
    return out
