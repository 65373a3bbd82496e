"""rl.reward_zero (StaysZero) over arrays reports exactly what its row version did, however rows are batched.

Generated logs: a reward near zero that sometimes moves, NaN stretches (one longer than the store looks
back for a finite point), steps that jump or go back. The oracle is the old row rule
(tests/rules/rowref/rl.py)."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st
from rowref import rl as row_rl
from rowref.harness import report

from tests.examples import examples
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


def test_a_reward_functions_mean_named_without_mean_is_judged_and_its_spread_is_not() -> None:
    """Older TRL logs a reward function's mean as `rewards/<name>` (its spread as `rewards/<name>/std`): a task
    reward at 0 in every record is told under that name as under `rewards/<name>/mean`; the spread at 0 and a
    preference run's implicit `rewards/chosen` near 0 are no reward stuck at 0."""
    from tests.rules.rulekit import Run

    r = Run("grpo")
    for s in range(10, 310, 10):
        r.step(s, **{"rewards/format_func": 0.1 + (s % 30) / 100, "rewards/equation_func": 0.0,
                     "rewards/equation_func/std": 0.0, "rewards/chosen": 0.0})
    r.finish()
    got = {c.alert.finding.evidence.get("metric") for c in r.changes if c.alert.rule == "rl.reward_zero"}
    assert got == {"rewards/equation_func"}
    records: list[Record] = [Sample(name, 0.0, s, source=SRC, line=2 * s + i + 1)
                             for s in range(30) for i, name in enumerate(("rewards/eq", "rewards/eq/std"))]
    want = report("rl.reward_zero", records, None, oracle=row_rl.StaysZero, preset="grpo")
    assert "rewards/eq has stayed at 0" in want and "rewards/eq/std" not in want
    assert report("rl.reward_zero", records, [9], preset="grpo") == want
