"""Byte counts over many spans of a chunk's data, over numpy arrays: the reference for the native
scanner's `span_census` (native/src/scan/census.rs), which counts the same bytes the same way.

An adapter that reads dicts from the arrays asks this of each dict's inside, to know the per-line reader
would read it alike: how many bytes fall outside a set it allows, how many of one mark byte there are
and how many of those lack the neighbours it expects, and how many of another byte. Which bytes mean
what is the caller's; bytes outside the data read as 0.
"""

from __future__ import annotations

import numpy as np

_SHORT = 256  # spans up to this many bytes are counted in strided windows, longer ones byte by byte


def span_census(data: bytes, start: np.ndarray, length: np.ndarray, allowed: np.ndarray, mark: int, before: int,
                after: int, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per span [start, start + length) of `data`: bytes b with not allowed[b]; `mark` bytes; `mark` bytes
    whose byte before is not `before` or whose byte after is not `after`; `count` bytes."""
    buf = np.frombuffer(data, dtype=np.uint8)
    start = np.asarray(start, dtype=np.int64)
    length = np.asarray(length, dtype=np.int64)
    n = len(start)
    bad, marks, misplaced, counted = (np.zeros(n, dtype=np.int64) for _ in range(4))
    if not n:
        return bad, marks, misplaced, counted
    short = np.flatnonzero(length <= _SHORT)
    if len(short):
        width = max(int(length[short].max()), 0)
        padded = np.concatenate((np.zeros(1, np.uint8), buf, np.zeros(width + 2, np.uint8)))
        view = np.lib.stride_tricks.sliding_window_view(padded, width + 2)
        win = view[start[short]]  # the byte before each span, the span, the byte after
        inside = np.arange(width) < length[short, None]
        sub = win[:, 1:-1]
        is_mark = (sub == mark) & inside
        bad[short] = (~allowed[sub] & inside).sum(axis=1)
        marks[short] = is_mark.sum(axis=1)
        misplaced[short] = (is_mark & ((win[:, :-2] != before) | (win[:, 2:] != after))).sum(axis=1)
        counted[short] = ((sub == count) & inside).sum(axis=1)
    long = np.flatnonzero(length > _SHORT)
    if len(long):
        m = len(long)
        cnt = length[long]
        owner = np.repeat(np.arange(m), cnt)
        at = np.repeat(start[long], cnt) + (np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt))
        padded = np.concatenate((np.zeros(1, np.uint8), buf, np.zeros(2, np.uint8)))
        sub = padded[at + 1]
        bad[long] = np.bincount(owner[~allowed[sub]], minlength=m)
        is_mark = sub == mark
        mark_at, mark_owner = at[is_mark], owner[is_mark]
        marks[long] = np.bincount(mark_owner, minlength=m)
        misplaced[long] = np.bincount(
            mark_owner[(padded[mark_at] != before) | (padded[mark_at + 2] != after)], minlength=m)
        counted[long] = np.bincount(owner[sub == count], minlength=m)
    return bad, marks, misplaced, counted
