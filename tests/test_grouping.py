"""A stretch's rows grouped by metric: the native counting sort gives numpy's arrays."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.examples import examples
from trainwatch.grouping import group_rows
from trainwatch.scan import native
from trainwatch.scan.reference.kernels import group_rows as group_rows_reference


@settings(max_examples=examples(300), deadline=None)
@given(names=st.lists(st.integers(0, 5), max_size=80), table=st.permutations(range(6)), extra=st.integers(0, 3))
def test_rows_are_grouped_by_id_in_row_order(names: list[int], table: list[int], extra: int) -> None:
    name = np.array(names, dtype=np.int32)
    tab = np.array(table, dtype=np.int64)
    kinds = 6 + extra  # ids no row has get empty groups
    ids, order, starts = group_rows(name, tab, kinds)
    want = group_rows_reference(name, tab, kinds)
    for a, b in zip((ids, order, starts), want):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == np.int64
    assert len(starts) == kinds + 1
    for k in range(kinds):
        rows = order[starts[k]:starts[k + 1]]
        assert (ids[rows] == k).all() and (np.diff(rows) > 0).all()


@pytest.mark.skipif(native() is None, reason="the native extension is not in use")
def test_ids_out_of_range_are_refused() -> None:
    with pytest.raises(ValueError):
        native().group_rows(np.array([3], dtype=np.int32), np.array([0, 1], dtype=np.int64), 2)
    with pytest.raises(ValueError):
        native().group_rows(np.array([0], dtype=np.int32), np.array([2], dtype=np.int64), 2)
