"""The one door to the native core's kernels: each function here chooses the native kernel when the native
scanner is in use (see `trainwatch.scan`), else its reference, and hands back typed results.

Nothing outside trainwatch/scan/ looks up the compiled extension (tests/test_native_facade.py holds to it),
so TRAINWATCH_SCANNER=reference runs pure Python throughout, and every array handed to the extension is
made contiguous and of its dtype in one place.

Two kinds of kernel live here:
- numeric kernels (byte counts, a numeric table's cells, row grouping, the store's buckets and gather,
  rolling medians and extremes, smoothing): both answers are here, the reference in `trainwatch.scan.reference.kernels`;
- the formats' fast paths (the Trainer console's plan and steady runs, JSON lines' readable lines, rows and
  one-pass take): these return None when the native core is not in use (or a number does not fit its
  int64), and the adapter's own numpy path, the reference those are proven against, answers.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import bottleneck as bn
import numpy as np

from trainwatch import scan
from trainwatch.errors import UsageError
from trainwatch.scan.chunk import Chunk
from trainwatch.scan.reference import kernels as ref

_i64, _f64, _i32 = np.int64, np.float64, np.int32


def _load() -> Any | None:
    """The compiled extension when the native scanner is the one in use (so TRAINWATCH_SCANNER=reference
    runs pure Python throughout), else None."""
    try:
        if scan.implementation() != "native":
            return None
    except UsageError:  # a forced scanner that cannot be had: said when a scanner is made
        return None
    from trainwatch import _scan

    return _scan


_NATIVE = _load()


def _core() -> Any | None:
    """The compiled extension when the native scanner is in use, else None (tests replace this to run
    the references with the extension built)."""
    return _NATIVE


def _c(a: np.ndarray, dtype: Any) -> np.ndarray:
    """`a` as a contiguous array of `dtype` (no copy when it is one already)."""
    return np.ascontiguousarray(a, dtype=dtype)


def native_in_use() -> bool:
    """Whether the kernels below run natively: a caller whose cheapest plan differs by implementation
    (the store's gather into place) asks this, never the extension itself."""
    return _core() is not None


# -- numeric kernels ----------------------------------------------------------------------------------


class Groups(NamedTuple):
    """Rows grouped by metric id: `order[starts[k]:starts[k + 1]]` are id k's rows, ascending."""

    ids: np.ndarray
    """Each row's metric id."""
    order: np.ndarray
    starts: np.ndarray


class Buckets(NamedTuple):
    """Per whole bucket of rows: least and greatest finite value (NaN when none), the finite values
    summed one at a time in row order, and how many were finite."""

    lows: np.ndarray
    highs: np.ndarray
    totals: np.ndarray
    counts: np.ndarray


class Tally(NamedTuple):
    """Of the values a gather took: how many were finite and NaN, and the least and greatest finite one."""

    finite: int
    nan: int
    least: float
    greatest: float


def count_byte(data: bytes, end: int, byte: int) -> int:
    """How many `byte`s data[:end] holds: a vector count natively, else numpy's byte compare."""
    ext = _core()
    if ext is not None:
        return int(ext.count_byte(data, end, byte))
    return ref.count_byte(data, end, byte)


def table_cells(data: bytes, start: int, end: int, width: int) -> np.ndarray:
    """The cells of the run of plain table rows of `width` cells at data[start:end] (whole lines, blanks
    between the cells, each a number; trainwatch/adapters/table_rows.py), as rows x width."""
    ext = _core()
    if ext is not None:
        cells, rows = ext.table_cells(data, start, end, width)
    else:
        cells, rows = ref.table_cells(data, start, end, width)
    return np.asarray(cells, dtype=_f64).reshape(rows, width)


def group_rows(name: np.ndarray, table: np.ndarray, kinds: int) -> Groups:
    """Each row's metric id (`table`, int64, at its batch name id `name`) and the rows of each id below
    `kinds`, ascending: a counting sort (two passes for all ids) natively, else numpy's stable argsort.
    ValueError natively when an id is out of range."""
    ext = _core()
    if ext is None:
        return Groups(*ref.group_rows(name, table, kinds))
    return Groups(*ext.group_rows(_c(name, _i32), table, kinds))


def fold_buckets(value: np.ndarray, finite: np.ndarray, size: int) -> Buckets:
    """The store's whole buckets of `size` rows over `value` (one pass natively; the ordered sums cost
    numpy a 2-D accumulate). `finite` must be `np.isfinite(value)`: the native fold reads it off the
    values itself."""
    ext = _core()
    if ext is None:
        return Buckets(*ref.fold_buckets(value, finite, size))
    return Buckets(*ext.fold_buckets(_c(value, _f64), size))


def gather_rows(rows: np.ndarray, columns: tuple[np.ndarray, ...], into: tuple[np.ndarray, ...], at: int) -> Tally:
    """Rows `rows` of the five columns (step, value, line, time, inferred) written into `into` from `at`
    on, and the tally of the values taken. Native only: call it when `native_in_use()` (the store tallies
    its numpy `take` itself). ValueError, nothing written, when a row or the room is out of range."""
    ext = _core()
    if ext is None:
        raise RuntimeError("gather_rows needs the native core; ask native_in_use() first")
    return Tally(*ext.gather_rows(rows, columns, into, at))


def move_median(x: np.ndarray, window: int, min_count: int) -> np.ndarray:
    """`bn.move_median(x, window=window, min_count=min_count)`, number for number (a zero's sign aside):
    natively when the window is at most the extension's MEDIAN_WINDOW_MAX. Its kernel rewrites a sorted
    window in one vector pass per row, cost growing with the window, where bottleneck's two heaps grow
    with its logarithm: faster for short windows, slower past that limit (see native/src/kernels/median.rs)."""
    ext = _core()
    if ext is not None and min_count == 1 and window <= ext.MEDIAN_WINDOW_MAX and x.dtype == np.float64:
        out: np.ndarray = ext.move_median(np.ascontiguousarray(x), window)
        return out
    return np.asarray(bn.move_median(x, window=window, min_count=min_count))


def move_extreme(x: np.ndarray, window: int, min_count: int, *, greatest: bool) -> np.ndarray:
    """`bn.move_max` (`greatest`) or `bn.move_min(x, window=window, min_count=min_count)`, the same
    numbers: natively (running extremes over blocks, without the GIL; bottleneck holds it) for float64."""
    ext = _core()
    if ext is not None and min_count == 1 and x.dtype == np.float64:
        out: np.ndarray = ext.move_extreme(np.ascontiguousarray(x), window, greatest)
        return out
    move = bn.move_max if greatest else bn.move_min
    return np.asarray(move(x, window=window, min_count=min_count))


def span_medians(x: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The median of each span x[start:end], NaN left out, NaN for an empty one: all spans in one native
    call for float64, else bottleneck on each."""
    ext = _core()
    if ext is not None and x.dtype == np.float64:
        out: np.ndarray = ext.span_medians(np.ascontiguousarray(x), _c(start, _i64), _c(end, _i64))
        return out
    return ref.span_medians(x, start, end)


def ema_path(ema: float, values: np.ndarray, windows: np.ndarray) -> np.ndarray:
    """The running smoothing `ema = ema + (v - ema) * 2.0 / k` after each row, float for float what a
    Python loop gives (natively one pass, as a trend rule smooths every row of a healthy backlog)."""
    ext = _core()
    if ext is not None:
        out: np.ndarray = ext.ema_path(float(ema), _c(values, _f64), _c(windows, _i64))
        return out
    return ref.ema_path(ema, values, windows)


# -- the formats' fast paths (None: the adapter's reference answers) ------------------------------------


def _lines(ch: Chunk) -> tuple[np.ndarray, np.ndarray]:
    return _c(ch.line_start, _i64), _c(ch.line_end, _i64)


def _dicts(ch: Chunk) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return _c(ch.dict_line, _i64), _c(ch.dict_start, _i64), _c(ch.dict_end, _i64)


def _entries(ch: Chunk) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return _c(ch.ent_dict, _i64), _c(ch.ent_key, _i32), _c(ch.ent_value, _f64)


class ConsolePlan(NamedTuple):
    """The Trainer console's plan of a chunk's hit lines, named as the adapter's `LinePlan`, `PlanArrays`
    and `DictFacts` fields (native/src/formats/console.rs)."""

    how: np.ndarray
    bar_from: np.ndarray
    limit: np.ndarray
    line_from: np.ndarray
    dict_of: np.ndarray
    plain: np.ndarray
    bar_n: np.ndarray
    bar_m: np.ndarray
    train: np.ndarray
    train_epoch: np.ndarray
    breaks: np.ndarray
    bounds: np.ndarray
    trainer: np.ndarray
    is_eval: np.ndarray
    epoch: np.ndarray


def console_plan(chunk: Chunk, hits: np.ndarray, flags: tuple[np.ndarray, np.ndarray, np.ndarray],
                 keys: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]) -> ConsolePlan | None:
    """The plan of hit lines `hits` given their flags (fine, has a dict, has a bar) and the key tables
    (slow, known, eval, epoch); None when the native core is not in use."""
    ext = _core()
    if ext is None:
        return None
    got = ext.console_plan(chunk.data, chunk.base_offset, _lines(chunk), _dicts(chunk), _entries(chunk),
                           hits, flags, keys)
    return ConsolePlan(**got)


class Samples(NamedTuple):
    """A run of dict lines' samples as columns: batch name id, step, value, line number."""

    name: np.ndarray
    step: np.ndarray
    value: np.ndarray
    line: np.ndarray


def dict_entries(chunk: Chunk, dicts: np.ndarray, steps: np.ndarray, linenos: np.ndarray, bounds: np.ndarray,
                 names: np.ndarray) -> Samples | None:
    """The samples of the console dicts `dicts` (their steps and line numbers given; `bounds` the entry
    bounds per dict, `names` the batch name id per key id); None when the native core is not in use."""
    ext = _core()
    if ext is None:
        return None
    return Samples(*ext.dict_entries(_c(dicts, _i64), _c(steps, _i64), _c(linenos, _i64), _c(bounds, _i64),
                                     _c(chunk.ent_key, _i32), _c(chunk.ent_value, _f64), names))


class SteadyLines(NamedTuple):
    """A steady console run: its end hit line, the bar's step after it, its train lines with the bar, epoch
    and step at each, and its redraw lines with their steps."""

    end: int
    bar_step: int
    train: np.ndarray
    bar_at_train: np.ndarray
    epochs: np.ndarray
    steps: np.ndarray
    redraws: np.ndarray
    redraw_steps: np.ndarray


class SteadyColumns(NamedTuple):
    """A steady run as the run buffer takes it: per train dict its chunk dict and line; per redraw the
    samples and events before it, its line and the total; samples added; most steps per epoch."""

    dicts: np.ndarray
    lines: np.ndarray
    redraw_samples: np.ndarray
    redraw_events: np.ndarray
    redraw_lines: np.ndarray
    redraw_totals: np.ndarray
    entries: int
    per_epoch: float


class Steady(NamedTuple):
    """`console_steady`'s run: its lines and its columns."""

    lines: SteadyLines
    columns: SteadyColumns


def console_steady(rows: tuple[np.ndarray, ...], start: int, run: tuple[int, int], total: int, bar_step: int,
                   bar_used: int | None, progress_sent: int | None, last: int | None,
                   place: tuple[np.ndarray, np.ndarray, np.ndarray, int, int, int]) -> Steady | int | None:
    """A steady run of a console plan from hit line `start`, or the hit line it stops at when too short;
    None when the native core is not in use or a number does not fit its int64."""
    ext = _core()
    if ext is None:
        return None
    try:
        got = ext.console_steady(rows, start, run, total, bar_step, bar_used, progress_sent, last, place)
    except OverflowError:
        return None
    if isinstance(got, int):
        return got
    lines, cols = got
    return Steady(SteadyLines(*lines), SteadyColumns(*cols))


class Rows(NamedTuple):
    """JSON-lines rows as columns (batch name id, step, value, line, time), how many lines were taken and
    the last step they set."""

    name: np.ndarray
    step: np.ndarray
    value: np.ndarray
    line: np.ndarray
    time: np.ndarray
    take: int
    last_step: int | None

    @property
    def columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The five columns, for `BatchBuilder.columns`."""
        return self.name, self.step, self.value, self.line, self.time


def jsonl_rows(key: np.ndarray, value: np.ndarray, row: np.ndarray, lineno: np.ndarray,
               tables: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], last_step: int | None) -> Rows | None:
    """The rows of a run of consecutive dicts' entries (`tables`: is_step, rank, is_time, name by key id);
    None when the native core is not in use (a last step past int64 is the caller's to rule out)."""
    ext = _core()
    if ext is None:
        return None
    return Rows(*ext.jsonl_rows(_c(key, _i32), _c(value, _f64), _c(row, _i64), _c(lineno, _i64), *tables,
                                last_step))


class Readable(NamedTuple):
    """Per line of a JSON-lines chunk its dict or -1, per line its nesting layout group or -1, and per
    group the dict to judge its layout by and its count of nested objects."""

    per_line: np.ndarray
    group: np.ndarray
    first: np.ndarray
    objects: np.ndarray


def jsonl_readable(chunk: Chunk, is_step: np.ndarray, is_total: np.ndarray, safe_int: float) -> Readable | None:
    """Which lines of a JSON-lines chunk the arrays say everything about; None when the native core is
    not in use."""
    ext = _core()
    if ext is None:
        return None
    return Readable(*ext.jsonl_readable(chunk.data, chunk.base_offset, _lines(chunk), _dicts(chunk),
                                        _entries(chunk), (_c(chunk.dict_json, bool), _c(chunk.dict_layout, _i64)),
                                        _c(is_step, bool), _c(is_total, bool), safe_int))


class Stop(NamedTuple):
    """Why a JSON-lines take stopped: `why` 0 at the end, 1 at `lines` lines for the per-line path, 2 at a
    nesting layout to judge, that of dict `dict` holding `objects` nested objects."""

    why: int
    lines: int
    dict: int
    objects: int


class Take(NamedTuple):
    """A JSON-lines take: the rows of the lines taken and why it stopped."""

    rows: Rows
    stop: Stop


class TakeInput(NamedTuple):
    """The chunk's arrays a JSON-lines take reads, made once per chunk (see `jsonl_take_input`)."""

    arrays: tuple[Any, ...]
    hits: np.ndarray


def jsonl_take_input(chunk: Chunk, keys: tuple[np.ndarray, ...], hits: np.ndarray) -> TakeInput | None:
    """What `jsonl_take` reads of the chunk, its hit lines and the key tables (is_step, is_total, rank,
    is_time, name); None when the native core is not in use."""
    if _core() is None:
        return None
    ch = chunk
    arrays = (ch.data, ch.base_offset, _lines(ch), _dicts(ch), _entries(ch),
              (_c(ch.dict_json, bool), _c(ch.dict_layout, _i64)), keys)
    return TakeInput(arrays, _c(hits, _i64))


def jsonl_take(given: TakeInput, nesting: np.ndarray, start: int, first_lineno: int, last_step: int | None,
               safe_int: float) -> Take:
    """The JSON-lines fast path over the hit lines from `start` (`nesting`: the layout verdicts by layout
    id), up to the end, lines for the per-line path, or a layout to judge. `given` comes from
    `jsonl_take_input`, so the native core is in use."""
    ext = _core()
    assert ext is not None, "jsonl_take_input said the native core is in use"
    cols, took, last, stop = ext.jsonl_take(*given.arrays, nesting, given.hits, start, first_lineno, last_step,
                                            safe_int)
    name, step, value, line, time = cols
    return Take(Rows(name, step, value, line, time, took, last), Stop(*stop))
