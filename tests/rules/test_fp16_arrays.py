"""fp16.overflow's loss-scale check over arrays reports exactly what its row version did, however batched.

Generated logs: a loss scale that stays put (bf16 runs print `loss scale: 1.0` on every line) or moves,
collapses to 1 or below, NaN rows, and a banner saying fp16 at some point. The oracle is the old row
rule (tests/rules/rowref/fp16.py)."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st
from rowref import fp16 as row_fp16
from rowref.harness import report

from tests.examples import examples
from trainwatch.model import Event, EventKind, Record, Sample

SRC = "run.log"


@st.composite
def scale_logs(draw) -> list[Record]:
    out: list[Record] = []
    values = draw(st.lists(st.sampled_from([0.5, 1.0, 1.0, 2.0, 65536.0, math.nan]), min_size=1, max_size=40))
    banner = draw(st.integers(-1, len(values)))
    for i, v in enumerate(values):
        if i == banner:
            out.append(Event(EventKind.INFO, SRC, 2 * i + 1, fields={"precision": "fp16"}))
        out.append(Sample("loss_scale", v, i, source=SRC, line=2 * i + 2))
    return out


@settings(max_examples=examples(150), deadline=None)
@given(scale_logs(), st.lists(st.integers(0, 80), max_size=6))
def test_loss_scale_collapse_matches_the_row_rule(records, cuts) -> None:
    want = report("fp16.overflow", records, None, oracle=row_fp16.Fp16Overflow)
    assert report("fp16.overflow", records, None) == want
    assert report("fp16.overflow", records, []) == want
    assert report("fp16.overflow", records, [c % (len(records) + 1) for c in cuts]) == want


def test_a_scale_of_one_that_never_moved_is_not_fp16_until_a_banner_says_so() -> None:
    ones: list[Record] = [Sample("loss_scale", 1.0, i, source=SRC, line=i + 1) for i in range(5)]
    assert report("fp16.overflow", ones, []) == "[]"
    told = [*ones, Event(EventKind.INFO, SRC, 6, fields={"precision": "fp16"}),
            Sample("loss_scale", 1.0, 5, source=SRC, line=7)]
    got = report("fp16.overflow", told, [])
    assert "collapsed to 1 at step 5" in got
    assert got == report("fp16.overflow", told, None, oracle=row_fp16.Fp16Overflow)
