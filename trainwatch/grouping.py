"""A stretch's rows grouped by metric, for the engine, which stores and judges a stretch a series at a
time: asking numpy for each metric's rows in turn is a pass over the whole stretch per metric, where a
counting sort in the native extension is two passes for all of them."""

from __future__ import annotations

import numpy as np

from trainwatch.scan import kernels


def group_rows(name: np.ndarray, table: np.ndarray, kinds: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row's metric id (`table`, int64, at its batch name id `name`) and the rows of each id,
    ascending: `order[starts[k]:starts[k + 1]]` for id k, for every id below `kinds`. In the native
    extension when it is in use, else numpy's (`trainwatch.scan.reference.kernels`), the same arrays."""
    return kernels.group_rows(name, table, kinds)
