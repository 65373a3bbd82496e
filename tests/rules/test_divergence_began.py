"""loss.diverging's "began rising at step N (v), leaving the noise band of its low ... (noise +-s)" is
the first point of the condition: from step N to the step the rise was found at, every point stood above
the band the message states (the low + its noise), and v is the value logged at N. A change-point
estimate (the CUSUM onset) can sit on a point the loss then came back under; the date is moved on past
the last such point."""

from __future__ import annotations

import random

import pytest
from rulekit import Run


def ramp(seed: int) -> list[float]:
    """A noisy flat loss, then a noisy ramp up (a LoRA run whose loss climbs from its plateau)."""
    rnd = random.Random(seed)
    return ([6.5 + rnd.gauss(0, 1.0) for _ in range(60)]
            + [6.5 + 0.35 * i + rnd.gauss(0, 1.0) for i in range(60)])


def slow_climb(seed: int) -> list[float]:
    """A first point far below, a jump, a settling and then a slow, noisy climb (a distillation run's
    task loss every 10 iterations)."""
    rnd = random.Random(seed)
    return [3.3, 4.9, 5.46, 5.27, 4.66, 4.55, 4.68, 4.64] + [4.7 + 0.004 * i + rnd.gauss(0, 0.15) for i in range(600)]


@pytest.mark.parametrize("make,seed", [(ramp, s) for s in (1, 3, 4, 7)] + [(slow_climb, s) for s in (0, 2, 5, 6, 7)])
def test_the_rise_began_where_the_loss_left_the_band_it_names_for_good(make, seed) -> None:  # type: ignore[no-untyped-def]
    vals = make(seed)
    r = Run()
    for i, v in enumerate(vals):
        r.step(10 * (i + 1), loss=v)
    r.finish()
    a = next(a for a in r.engine.alerts() if a.rule == "loss.diverging")
    ev = a.finding.evidence
    by = {10 * (i + 1): v for i, v in enumerate(vals)}
    began, found, top = ev["step"], ev["detected_step"], ev["baseline"] + ev["noise"]
    assert ev["value"] == by[began] and f"began rising at step {began} (" in a.finding.message
    assert [s for s, v in by.items() if began <= s <= found and v <= top] == []  # out of the band from there on
    before = began - 10
    assert before <= ev["baseline_step"] or by[before] <= top  # ... and the point before it was not
