"""The native core (native/, built by maturin as `trainwatch._scan`): the scanner, the formats' fast paths
and numeric kernels, over numpy arrays.

Nothing outside trainwatch/scan/ imports this module: `trainwatch.scan.kernels` chooses it or the Python
reference for each kernel and wraps the wide tuples below in named result classes. Arrays passed in must be
one-dimensional, contiguous and of the dtype named (int64 unless said otherwise); the functions let go of
the GIL while they run. ValueError means arrays that should be of one length are not, or an index is out of
range.
"""

from typing import Any

import numpy as np
from numpy.typing import NDArray

MAX_LINE: int
"""Longest line kept whole, in bytes; the rest of a longer line is dropped (the scanner contract)."""

MEDIAN_WINDOW_MAX: int
"""Longest window `move_median` is faster for than bottleneck's two heaps on this CPU (64, or 256 with AVX2)."""

_I64 = NDArray[np.int64]
_I32 = NDArray[np.int32]
_F64 = NDArray[np.float64]
_Bool = NDArray[np.bool_]
_Lines = tuple[_I64, _I64]
_Dicts = tuple[_I64, _I64, _I64]
_Entries = tuple[_I64, _I32, _F64]

class Scanner:
    """Finds lines, keyword hits, dicts (nested ones flattened), `key: value` tokens and progress bars in
    fed bytes; `trainwatch.scan.native.Scanner` turns its dicts into `Chunk`s."""

    def __init__(self, keywords: list[str] = ...) -> None:
        """A scanner reporting hits of `keywords`; ValueError for an empty or over-long keyword."""

    def feed(self, data: bytes) -> dict[str, Any]:
        """Scans the complete lines of `data` (after the held partial line) and keeps the new partial line:
        a dict of the chunk's arrays, named as `Chunk`'s fields, with `first_lineno`, `base_offset` and
        `data`."""

    def finish(self) -> dict[str, Any]:
        """The held partial line as a last line (then nothing is held), as `feed`'s dict."""

    def release(self) -> int:
        """The buffers kept for the next chunk given back; the bytes they held."""

    @property
    def keys(self) -> list[str]:
        """The key table (decoded with replacement characters); `ent_key` and `kv_key` index it."""

    @property
    def pending(self) -> int:
        """Bytes of the partial line held."""

def plain_bars(data: bytes, p: _I64, seg: _I64, limit: _I64) -> tuple[_Bool, _I64, _I64]:
    """tqdm's plain bars at the `%|` positions `p` (their `\\r`-segment starts `seg`, read before `limit`):
    (plain, N, M), N and M 0 where the bar is not plain; a position outside the data reads as no bar."""

def span_census(data: bytes, start: _I64, length: _I64, allowed: _Bool, mark: int, before: int, after: int,
                count: int) -> tuple[_I64, _I64, _I64, _I64]:
    """Byte counts over the spans data[start:start + length] (`allowed`: 256 flags): bytes outside
    `allowed`, `mark` bytes, marks not between `before` and `after`, and `count` bytes."""

def positions(data: bytes, needle: bytes) -> _I64:
    """Every offset of `needle` in `data`, ascending, overlapping ones included."""

def count_byte(data: bytes, end: int, byte: int) -> int:
    """How many `byte`s data[:end] holds (a vector count)."""

def table_cells(data: bytes, start: int, end: int, width: int) -> tuple[_F64, int]:
    """The cells of the run of plain table rows at data[start:end], row after row, and how many rows: whole
    lines of `width` numbers (shapes.NUM less `nan.0` and `%`), blanks before, between and after them; the
    run stops at the first other line, or one with no `\\n` before `end`."""

def ema_path(ema: float, values: _F64, windows: _I64) -> _F64:
    """The smoothed value after each row: `ema = ema + (value - ema) * 2.0 / window`, float for float."""

def fold_buckets(values: _F64, size: int) -> tuple[_F64, _F64, _F64, _I64]:
    """Per whole bucket of `size` rows: (least finite value, greatest finite value, the finite values summed
    in row order, how many were finite); NaN extremes where none is finite."""

def move_median(x: _F64, window: int) -> _F64:
    """The median of each row's trailing `window` values, NaN left out: bottleneck's
    `move_median(x, window, min_count=1)`."""

def move_extreme(x: _F64, window: int, greatest: bool) -> _F64:
    """The least (`greatest` false) or greatest of each row's trailing `window` values, NaN left out:
    bottleneck's `move_min` / `move_max(x, window, min_count=1)`."""

def span_medians(x: _F64, start: _I64, end: _I64) -> _F64:
    """The median of each span x[start:end], NaN left out; NaN for an empty span."""

def gather_rows(rows: _I64, from_: tuple[_I64, _F64, _I64, _F64, _Bool],
                into: tuple[_I64, _F64, _I64, _F64, _Bool], at: int, /) -> tuple[int, int, float, float]:
    """Rows `rows` of a stretch's five columns (step, value, line, time, inferred) written into a series'
    columns from `at` on: (finite, NaN, least, greatest) of the values taken. ValueError, nothing written,
    when a row or the room is out of range."""

def group_rows(name: _I32, table: _I64, kinds: int) -> tuple[_I64, _I64, _I64]:
    """A stretch's rows by metric id (a counting sort): each row's id (`table` at its batch name id), the
    rows ordered by id, ascending within one, and where each id's rows start (`kinds + 1` of them).
    ValueError when an id is out of range."""

def jsonl_readable(data: bytes, base: int, lines: _Lines, dicts: _Dicts, entries: _Entries,
                   forms: tuple[_Bool, _I64], is_step: _Bool, is_total: _Bool,
                   safe_int: float) -> tuple[_I64, _I64, _I64, _I64]:
    """Which lines of a JSON-lines chunk the arrays say everything about: per line its dict or -1, per line
    its nesting layout group or -1, per group the dict to judge its layout by and its count of nested
    objects. `forms`: per dict, plain JSON of numbers, and its layout id."""

def jsonl_rows(key: _I32, value: _F64, row: _I64, lineno: _I64, is_step: _Bool, rank: _I64, is_time: _Bool,
               name: _I32, last_step: int | None
               ) -> tuple[_I32, _I64, _F64, _I64, _F64, int, int | None]:
    """JSON-lines rows from a run of consecutive dicts' entries: the metric entries' name, step, value, line
    and time columns, how many rows were taken (up to a step that goes back) and the last step they set."""

def jsonl_take(data: bytes, base: int, lines: _Lines, dicts: _Dicts, entries: _Entries,
               forms: tuple[_Bool, _I64], keys: tuple[_Bool, _Bool, _I64, _Bool, _I32], nesting: _I64,
               hits: _I64, start: int, first_lineno: int, last_step: int | None, safe_int: float
               ) -> tuple[tuple[_I32, _I64, _F64, _I64, _F64], int, int | None, tuple[int, int, int, int]]:
    """The JSON-lines fast path over hit lines from hits[start]: the rows taken (name, step, value, line,
    time), how many hit lines were taken, the last step, and why it stopped: (0, 0, -1, 0) at the end,
    (1, n, -1, 0) at n lines for the per-line path, (2, 0, d, k) at the nesting layout of dict d (k nested
    objects) to judge. `keys`: is_step, is_total, rank, is_time, name by key id; `nesting`: the layout
    verdicts by layout id (-1 unknown)."""

def console_plan(data: bytes, base: int, lines: _Lines, dicts: _Dicts, entries: _Entries, hits: _I64,
                 flags: tuple[_Bool, _Bool, _Bool], keys: tuple[_Bool, _Bool, _Bool, _Bool]) -> dict[str, Any]:
    """The Trainer console's plan of a chunk's hit lines (`flags`: fine, has a dict, has a bar; `keys`:
    slow, known, eval, epoch by key id), a dict of arrays named as `trainwatch.scan.kernels.ConsolePlan`."""

def dict_entries(dicts: _I64, steps: _I64, lines: _I64, bounds: _I64, ent_key: _I32, ent_value: _F64,
                 names: _I32) -> tuple[_I32, _I64, _F64, _I64]:
    """The samples of console dict lines: per entry its batch name id, its dict's step and line, its value."""

def console_steady(rows: tuple[_I64, _Bool, _I64, _I64, _Bool, _F64], start: int, run: tuple[int, int],
                   total: int, bar_step: int, bar_used: int | None, progress_sent: int | None, last: int | None,
                   place: tuple[_I64, _I64, _I64, int, int, int]) -> int | tuple[tuple[Any, ...], tuple[Any, ...]]:
    """A steady run of a console plan from hit line `start`: the hit line it stops at when too short, else
    ((end, bar step after, train lines, the bar at each, their epochs, their steps, redraw lines, redraw
    steps), (dict, line, redraw samples, events, lines and totals, samples added, steps per epoch)), as
    `trainwatch.scan.kernels.Steady` names them. OverflowError when a number does not fit an int64."""
