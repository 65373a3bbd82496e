"""rl.reward_zero (StaysZero) over arrays reports exactly what its row version did, however rows are batched.

Generated logs: a reward near zero that sometimes moves, NaN stretches (one longer than the store looks
back for a finite point), steps that jump or go back. The oracle is the old row rule
(tests/rules/rowref/rl.py)."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.examples import examples
from rowref import rl as row_rl
from rowref.harness import report

from trainwatch.model import Record, Sample

SRC = "run.log"


@st.composite
def reward_logs(draw) -> list[Record]:
    out: list[Record] = []
    step = draw(st.integers(0, 5))
    pieces = draw(st.lists(st.tuples(st.sampled_from(["zero", "tiny", "moved", "nan", "longnan"]),
                                     st.integers(1, 8)), min_size=1, max_size=8))
    for kind, n in pieces:
        for _ in range(300 if kind == "longnan" else n):
            v = {"zero": 0.0, "tiny": 0.004, "moved": 0.5}.get(kind, math.nan)
            out.append(Sample("rewards/fmt/mean", v, step, source=SRC, line=len(out) + 1))
            step += draw(st.sampled_from([1, 1, 5, 0])) if kind != "longnan" else 1
    return out


@settings(max_examples=examples(100), deadline=None)
@given(reward_logs(), st.lists(st.integers(0, 400), max_size=6))
def test_reward_zero_matches_the_row_rule(records, cuts) -> None:
    want = report("rl.reward_zero", records, None, oracle=row_rl.StaysZero, preset="grpo")
    assert report("rl.reward_zero", records, None, preset="grpo") == want
    assert report("rl.reward_zero", records, [], preset="grpo") == want
    assert report("rl.reward_zero", records, [c % (len(records) + 1) for c in cuts], preset="grpo") == want


def test_a_reward_that_never_left_zero_is_reported_once_it_spans_the_steps() -> None:
    records: list[Record] = [Sample("rewards/fmt/mean", 0.0, s, source=SRC, line=s + 1) for s in range(30)]
    got = report("rl.reward_zero", records, [7], preset="grpo")
    assert "has stayed at 0" in got and "for 20 steps" in got
    assert got == report("rl.reward_zero", records, None, oracle=row_rl.StaysZero, preset="grpo")
