"""The Rust scanner (`trainwatch._scan`) behind the same interface as the reference: feed returns a Chunk.

The extension returns a dict of numpy arrays; this wrapper only turns it into the shared `Chunk` type,
without copying the arrays (their dtypes already match).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from trainwatch import _scan  # the compiled extension
from trainwatch.scan.chunk import Chunk


def _chunk(out: dict[str, Any]) -> Chunk:
    return Chunk.from_arrays(out["first_lineno"], out["base_offset"], out["data"], out)


class Scanner:
    """Finds lines, keyword hits, dicts, key/value tokens and progress bars in fed bytes (native code)."""

    def __init__(self, keywords: Iterable[str] = ()) -> None:
        self._native = _scan.Scanner(list(keywords))

    @staticmethod
    def plain_bars(data: bytes, p: np.ndarray, seg: np.ndarray, limit: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """tqdm's plain bars at `%|` positions p (see trainwatch/scan/bars.py): (plain, N, M)."""
        def int64(a: np.ndarray) -> np.ndarray:
            return np.ascontiguousarray(a, dtype=np.int64)

        return _scan.plain_bars(data, int64(p), int64(seg), int64(limit))

    def feed(self, data: bytes) -> Chunk:
        """The complete lines of `data` (after the held partial line); a trailing partial line is kept."""
        return _chunk(self._native.feed(data))

    def finish(self) -> Chunk:
        """The held partial line as a last line, then an empty chunk from later calls."""
        return _chunk(self._native.finish())

    def release(self) -> int:
        """The buffers kept to build the next chunk in given back (a later feed makes fresh ones); the
        bytes they held. Each one is the size of a block read: a source that is done reading its
        backlog should not hold one while it waits."""
        return int(self._native.release())

    @staticmethod
    def span_census(data: bytes, start: np.ndarray, length: np.ndarray, allowed: np.ndarray, mark: int,
                    before: int, after: int, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Byte counts over spans of `data` (see trainwatch/scan/census.py)."""
        return _scan.span_census(data, np.ascontiguousarray(start, dtype=np.int64),
                                 np.ascontiguousarray(length, dtype=np.int64),
                                 np.ascontiguousarray(allowed, dtype=bool), mark, before, after, count)

    @staticmethod
    def positions(data: bytes, needle: bytes) -> np.ndarray:
        """Every offset of `needle` in `data` (see trainwatch/scan/find.py)."""
        return _scan.positions(data, needle)

    @property
    def keys(self) -> list[str]:
        """The key table; `ent_key` and `kv_key` index it. It only grows."""
        keys: list[str] = self._native.keys
        return keys

    @property
    def pending(self) -> int:
        """Bytes of the partial line held (at most MAX_LINE; the rest of a longer line is dropped)."""
        return int(self._native.pending)
