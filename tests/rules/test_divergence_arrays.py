"""loss.diverging over arrays reports what the row-at-a-time rule reported, however the rows are cut.

The oracle is the rule as it was (tests/rules/rowref/divergence_row.py). Generated losses mix falling
curves, noise, slow rises, blow-ups, spikes, NaN stretches and restarts (the step going back)."""

from __future__ import annotations

import math
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.examples import examples
from tests.rules.rowref.compare import alerts, random_cuts, samples
from tests.rules.rowref.divergence_row import LossDiverging as RowLossDiverging

KINDS = ("flat", "fall", "rise", "blowup", "nan", "restart", "spike", "tiny", "negative")

segment = st.tuples(st.sampled_from(KINDS), st.integers(1, 300), st.floats(0.01, 10.0), st.floats(0.0, 0.5))


def make_loss(segments: list[tuple[str, int, float, float]], seed: int) -> list[tuple[int, float]]:
    """(step, loss) rows: each segment continues the curve in its own way."""
    rng = random.Random(seed)
    rows: list[tuple[int, float]] = []
    step, level = 0, 2.0
    for kind, n, scale, noise in segments:
        if kind == "restart":
            step = max(0, step - rng.randrange(1, max(2, step + 1)))
            level = scale
        for i in range(n):
            step += rng.choice((1, 1, 1, 10))
            if kind == "fall":
                level *= 0.995
            elif kind == "rise":
                level *= 1.0 + scale / 500.0
            elif kind == "blowup" and i == n // 2:
                level *= 5.0 + scale
            elif kind == "tiny":
                level = 1e-3 * scale
            elif kind == "negative":
                level = -scale
            v = level * (1.0 + rng.gauss(0.0, noise))
            if kind == "spike" and rng.random() < 0.05:
                v *= 20.0
            if kind == "nan" and rng.random() < 0.8:
                v = math.nan if rng.random() < 0.8 else math.inf
            rows.append((step, v))
    return rows


@settings(max_examples=examples(60), deadline=None)
@given(segments=st.lists(segment, min_size=1, max_size=8), seed=st.integers(0, 2**16))
def test_array_rule_finds_what_the_row_rule_found(segments: list[tuple[str, int, float, float]], seed: int) -> None:
    records = samples("loss", make_loss(segments, seed))
    want = alerts("loss.diverging", RowLossDiverging, records, None)
    assert alerts("loss.diverging", None, records, []) == want
    assert alerts("loss.diverging", None, records, None) == want
    assert alerts("loss.diverging", None, records, random_cuts(len(records), seed)) == want


def test_a_blow_up_is_found_and_dated_before_it_was_certain() -> None:
    rows = make_loss([("fall", 200, 1.0, 0.02), ("blowup", 40, 1.0, 0.02)], 1)
    got = alerts("loss.diverging", None, samples("loss", rows), [])
    assert '"id": "loss.diverging"' in got
    assert got == alerts("loss.diverging", RowLossDiverging, samples("loss", rows), None)


def test_long_runs_across_many_batches_match() -> None:
    """Longer than the rows the store keeps, so the carried rows and the onset's look-back matter."""
    rows = make_loss([("fall", 300, 1.0, 0.1), ("flat", 2700, 1.0, 0.1), ("nan", 600, 1.0, 0.0),
                      ("rise", 1500, 1.0, 0.05)], 7)
    want = alerts("loss.diverging", RowLossDiverging, samples("loss", rows), None)
    assert '"id": "loss.diverging"' in want
    assert alerts("loss.diverging", None, samples("loss", rows), random_cuts(len(rows), 3)) == want


def test_a_loss_near_the_largest_float_is_judged_without_error() -> None:
    """Medians of values near 1e308 overflow to inf before any low is known: no rise can be measured."""
    rows = [(i + 1, 1e308) for i in range(8)] + [(9 + i, 1.0) for i in range(40)]
    records = samples("loss", rows)
    want = alerts("loss.diverging", RowLossDiverging, records, None)
    assert alerts("loss.diverging", None, records, []) == want
    assert alerts("loss.diverging", None, records, None) == want


def test_a_smoothed_noise_that_overflows_starts_again_as_the_row_rule_starts_it() -> None:
    """Every third loss near the largest float: the point noise jumps to ~1e308 and the smoothing's
    `(v - ema) * 2.0` overflows to inf, then NaN. The row rule starts the smoothing again from the next
    row; a batch smoothed in one go must too, or the low's noise band (in the message) comes out wrong."""
    rng = random.Random(1)
    rows: list[tuple[int, float]] = []
    level = 2.0
    for i in range(460):
        level *= 0.995 if i < 100 else 0.999 if i < 160 else 0.998
        huge = 100 <= i < 160 and i % 3 == 0
        rows.append((i + 1, 1e308 if huge else level * (1.0 + rng.gauss(0.0, 0.02))))
    for i in range(300):
        level *= 1.01
        rows.append((461 + i, level * (1.0 + rng.gauss(0.0, 0.02))))
    records = samples("loss", rows)
    want = alerts("loss.diverging", RowLossDiverging, records, None)
    assert '"id": "loss.diverging"' in want
    assert alerts("loss.diverging", None, records, [100, 460]) == want
