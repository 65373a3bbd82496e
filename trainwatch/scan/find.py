"""Where a short byte string occurs in a chunk's data, over numpy arrays: the reference for the native
scanner's `positions` (native/src/scan/find.rs), which gives the same offsets.

An adapter that plans its lines over arrays needs the offsets of its format's structure bytes (the
Trainer console's `{`, `\\r` and tqdm's `%|`); the native one finds them with SIMD and without the GIL.
"""

from __future__ import annotations

import numpy as np


def positions(data: bytes, needle: bytes) -> np.ndarray:
    """Every offset at which `needle` starts in `data`, ascending (int64); occurrences may overlap. An
    empty needle occurs nowhere."""
    buf = np.frombuffer(data, dtype=np.uint8)
    k = len(needle)
    if not k or k > len(buf):
        return np.zeros(0, dtype=np.int64)
    at = np.flatnonzero(buf[:len(buf) - k + 1] == needle[0])  # from the first byte, then narrowed
    for j in range(1, k):
        at = at[buf[at + j] == needle[j]]
    return at.astype(np.int64, copy=False)
