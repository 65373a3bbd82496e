"""What one `Scanner.feed` returns: the lines of a piece of a log and what was found in them, as arrays.

Both scanners (the native `trainwatch._scan` and the pure-Python `trainwatch.scan.reference`) build this
same type, so the adapters and the differential tests never care which one ran. The field meanings are
those of the scanner contract; in short:

- offsets (`line_start`, `line_end`, `visible_start`, `dict_start`, `dict_end`, `kv_pos`) are absolute:
  bytes since the first byte ever fed to the scanner;
- `kw_line`, `dict_line`, `kv_line`, `prog_line` are 0-based line indices within this chunk, and
  `ent_dict` is a dict index within this chunk;
- `kw_id` indexes the scanner's keyword list, `ent_key` and `kv_key` index `Scanner.keys`.

An empty chunk (no complete line yet) still says where the next line would begin: `first_lineno` is
that line's number and `base_offset` its first byte, so chunks from consecutive feeds always join up.

`data` is every line's bytes as fed, terminators included, except that a line longer than MAX_LINE keeps
only its first MAX_LINE bytes (then its own `\n` or `\r\n`): the scanner holds no more of a partial
line than that, and this way `data` is the same however the input was cut into feeds. Offsets stay
exact, so `data[s - base_offset:e - base_offset]` slices a line only while no line before it in the
chunk was cut; `line(i)` and `visible(i)` handle both cases.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from functools import cached_property
from typing import Any

import numpy as np

# Bytes of a line that are kept and scanned; the native scanner exports the same value.
MAX_LINE = 1 << 20


def kept(raw: bytes) -> bytes:
    """What the scanners keep of one complete line (`raw`: its bytes before the `\n`): the whole line, or
    when it holds more than MAX_LINE bytes (a `\r` right before the `\n` not counted), its first
    MAX_LINE bytes and that `\r`. The readers that go line by line cut lines here too, so a line reads
    the same whichever reader met it."""
    cr = raw.endswith(b"\r")
    if len(raw) - cr <= MAX_LINE:
        return raw
    return raw[:MAX_LINE] + b"\r" if cr else raw[:MAX_LINE]

_I64 = np.int64
_I32 = np.int32
_F64 = np.float64

# (field, dtype) of every array field, in a fixed order shared by both scanners.
ARRAY_FIELDS: tuple[tuple[str, type], ...] = (
    ("line_start", _I64), ("line_end", _I64), ("visible_start", _I64),
    ("kw_line", _I64), ("kw_id", _I32),
    ("dict_line", _I64), ("dict_start", _I64), ("dict_end", _I64), ("dict_json", np.bool_), ("dict_layout", _I64),
    ("ent_dict", _I64), ("ent_key", _I32), ("ent_value", _F64),
    ("kv_line", _I64), ("kv_key", _I32), ("kv_value", _F64), ("kv_pos", _I64),
    ("prog_line", _I64), ("prog_n", _I64), ("prog_total", _I64),
)

# Fields holding a chunk-relative index, and the per-chunk count that shifts them when chunks are joined.
_LINE_INDEX_FIELDS = ("kw_line", "dict_line", "kv_line", "prog_line")


@dataclass(frozen=True, eq=False)
class Chunk:
    """Complete lines of one feed and the keyword hits, dicts, key/value tokens and progress bars in them."""

    first_lineno: int
    base_offset: int
    data: bytes
    line_start: np.ndarray
    line_end: np.ndarray
    visible_start: np.ndarray
    kw_line: np.ndarray
    kw_id: np.ndarray
    dict_line: np.ndarray
    dict_start: np.ndarray
    dict_end: np.ndarray
    dict_json: np.ndarray
    dict_layout: np.ndarray
    ent_dict: np.ndarray
    ent_key: np.ndarray
    ent_value: np.ndarray
    kv_line: np.ndarray
    kv_key: np.ndarray
    kv_value: np.ndarray
    kv_pos: np.ndarray
    prog_line: np.ndarray
    prog_n: np.ndarray
    prog_total: np.ndarray

    def __len__(self) -> int:
        """Number of lines in the chunk."""
        return int(self.line_start.shape[0])

    def line(self, i: int) -> bytes:
        """The bytes of line `i` (0-based within the chunk), without its `\\n` or a `\\r` before it;
        the first MAX_LINE bytes of a longer line."""
        start = self._data_start(i)
        return self.data[start:start + self._kept(i)]

    def visible(self, i: int) -> bytes:
        """The last non-empty `\\r`-segment of line `i`: what a terminal shows after the redraws."""
        start = self._data_start(i)
        return self.data[start + int(self.visible_start[i] - self.line_start[i]):start + self._kept(i)]

    def _kept(self, i: int) -> int:
        return min(int(self.line_end[i] - self.line_start[i]), MAX_LINE)

    def _data_start(self, i: int) -> int:
        starts = self._cut_line_starts
        return int(self.line_start[i]) - self.base_offset if starts is None else int(starts[i])

    @cached_property
    def _cut_line_starts(self) -> np.ndarray | None:
        """Where each line starts in `data` when some line was cut to MAX_LINE bytes (else None)."""
        lengths = self.line_end - self.line_start
        if not bool((lengths > MAX_LINE).any()):
            return None
        kept = np.minimum(lengths, MAX_LINE)
        terminators = self.line_start[1:] - self.line_end[:-1]
        return np.concatenate([[0], np.cumsum(kept[:-1] + terminators)]).astype(np.int64)

    @classmethod
    def from_arrays(cls, first_lineno: int, base_offset: int, data: bytes, arrays: Mapping[str, Any]) -> Chunk:
        """A chunk from a mapping of field name to array-like; each is converted to its contract dtype.
        A mapping without `dict_json` (a format plugin's own chunk) says no dict is known to be plain JSON;
        without `dict_layout`, that no two dicts are known to share their keys (each gets its own
        negative layout)."""
        if "dict_json" not in arrays:
            arrays = {**arrays, "dict_json": np.zeros(len(arrays["dict_line"]), dtype=bool)}
        if "dict_layout" not in arrays:  # no layout known: each dict its own
            arrays = {**arrays, "dict_layout": -1 - np.arange(len(arrays["dict_line"]), dtype=np.int64)}
        converted: dict[str, np.ndarray] = {
            name: np.ascontiguousarray(np.asarray(arrays[name], dtype=dtype)) for name, dtype in ARRAY_FIELDS}
        return cls(first_lineno=int(first_lineno), base_offset=int(base_offset), data=bytes(data), **converted)

    @classmethod
    def empty(cls, first_lineno: int, base_offset: int) -> Chunk:
        """A chunk with no lines that says where the next line starts."""
        return cls.from_arrays(first_lineno, base_offset, b"", {name: () for name, _ in ARRAY_FIELDS})

    def same_as(self, other: Chunk) -> bool:
        """True when every field is equal (NaN equal to NaN, dtypes included): the differential tests' test."""
        return not self.differences(other)

    def differences(self, other: Chunk) -> list[str]:
        """Names of the fields that differ, so a failing comparison says where."""
        out = [f.name for f in fields(self) if f.name in ("first_lineno", "base_offset", "data")
               and getattr(self, f.name) != getattr(other, f.name)]
        for name, _ in ARRAY_FIELDS:
            a, b = getattr(self, name), getattr(other, name)
            if a.dtype != b.dtype or not np.array_equal(a, b, equal_nan=a.dtype.kind == "f"):
                out.append(name)
        return out


def concat(chunks: Iterable[Chunk]) -> Chunk:
    """Join consecutive chunks of one scanner into the chunk one feed of all their bytes would give.

    Chunk-relative indices (line and dict indices) are shifted by the lines and dicts before them;
    absolute offsets and line numbers need no change. Used to check chunking invariance.
    """
    parts = list(chunks)
    if not parts:
        raise ValueError("concat needs at least one chunk")
    first = parts[0]
    arrays: dict[str, list[np.ndarray]] = {name: [] for name, _ in ARRAY_FIELDS}
    lines_before = 0
    dicts_before = 0
    for part in parts:
        for name, _ in ARRAY_FIELDS:
            value = getattr(part, name)
            if name in _LINE_INDEX_FIELDS:
                value = value + lines_before
            elif name == "ent_dict":
                value = value + dicts_before
            arrays[name].append(value)
        lines_before += len(part)
        dicts_before += int(part.dict_line.shape[0])
    joined: dict[str, np.ndarray] = {
        name: np.concatenate(arrays[name]).astype(dtype, copy=False) for name, dtype in ARRAY_FIELDS}
    return Chunk.from_arrays(first.first_lineno, first.base_offset, b"".join(p.data for p in parts), joined)
