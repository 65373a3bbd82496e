"""The follower's line count of a backlog piece: the native vector count is numpy's byte compare."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from trainwatch.scan import native
from trainwatch.sources.tail import newlines


@pytest.mark.skipif(native() is None, reason="the native extension is not in use")
@given(data=st.binary(max_size=300).map(lambda b: b.replace(b"a", b"\n")), cut=st.integers(0, 400))
def test_the_native_newline_count_is_numpys(data: bytes, cut: int) -> None:
    end = min(cut, len(data))
    assert newlines(data, end) == int(np.count_nonzero(np.frombuffer(data, dtype=np.uint8, count=end) == 0x0A))
    ext = native()
    assert ext is not None
    assert ext.count_byte(data, len(data) + 5, 0x0A) == data.count(b"\n")  # past the end: all of it
