"""Array helpers the column readers share: spans of a chunk's entries and bytes, without a Python loop."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from trainwatch.adapters.pipeline import Positions
    from trainwatch.scan import Chunk


def entry_bounds(chunk: Chunk) -> np.ndarray:
    """Index of each dict's first entry, and one past the last dict's last: entries of dict d are
    [bounds[d], bounds[d + 1])."""
    nd = chunk.dict_line.shape[0]
    out = np.zeros(nd + 1, dtype=np.int64)
    if len(chunk.ent_dict):  # entries come sorted by dict: a count per dict, summed, bounds them
        np.cumsum(np.bincount(chunk.ent_dict, minlength=nd), out=out[1:])
    return out


def byte_counts(chunk: Chunk, positions: Positions, byte: bytes, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """How many times `byte` occurs in each absolute span [start, end) of the chunk's data, from its
    offsets (`positions`: the scanner's finder, native or reference)."""
    at = positions(chunk.data, byte) + chunk.base_offset
    return np.searchsorted(at, end) - np.searchsorted(at, start)  # a running count costs 8x more


def ranges(lo: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ranges [lo[i], lo[i] + count[i]) laid end to end: (index, which range, place in it)."""
    count = np.asarray(count, dtype=np.int64)
    owner = np.repeat(np.arange(len(count)), count)
    place = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
    return np.repeat(np.asarray(lo, dtype=np.int64), count) + place, owner, place


def repeated_keys(owner: np.ndarray, key: np.ndarray, n: int) -> np.ndarray:
    """Per owner 0..n-1 (entries sorted by owner), whether one of its entries repeats a key. When keys
    rise within every owner (the scanner numbers keys in the order it meets them, so a log whose lines
    share a layout does), nothing repeats and no sort is needed."""
    out = np.zeros(n, dtype=bool)
    if len(key) < 2:
        return out
    width = int(key.max()) + 1
    pair = owner.astype(np.int64) * width + key
    if bool((pair[1:] > pair[:-1]).all()):
        return out
    pair.sort()
    out[pair[1:][pair[1:] == pair[:-1]] // width] = True
    return out
