"""Issue 22, class 5: a loss trained down near 0 that jumps for a few points and comes back is a spike
(a warning at most), not a critical divergence; near 0 the loss scatters by factors, so a blow-up is
measured from where the run began, on a log scale. A rise that stays up is still a divergence, and a
blow-up far above the start is still called at once."""

from __future__ import annotations

import random

import pytest
from rulekit import Run, loss_run

from trainwatch.model import Severity


def near_zero(high: list[float], after: int = 100, seed: int = 0) -> list[float]:
    """The shape of a JAX robot-policy fine-tune: 0.23 falling to 0.01-0.02, then `high`, then `after`
    points back at 0.01-0.02."""
    rng = random.Random(seed)
    rows = [0.23 * 0.92 ** i + 0.012 for i in range(40)]
    rows += [rng.uniform(0.01, 0.02) for _ in range(150)]
    rows += high
    rows += [rng.uniform(0.01, 0.02) for _ in range(after)]
    return rows


def run(losses: list[float]) -> Run:
    return loss_run(losses, every=100)


def severities(r: Run) -> dict[str, Severity]:
    return {a.rule: a.severity for a in r.engine.alerts()}


@pytest.mark.parametrize("k", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_few_points_up_near_zero_that_come_back_are_a_spike(k, seed):
    rng = random.Random(seed + 100)
    r = run(near_zero([rng.uniform(0.2, 0.3) for _ in range(k)], seed=seed))
    found = severities(r)
    assert "loss.diverging" not in found
    assert found.get("loss.spike", Severity.WARNING) <= Severity.WARNING
    assert r.engine.worst() is None or r.engine.worst() <= Severity.WARNING


def test_isolated_recurring_spikes_near_zero_stay_a_warning():
    rng = random.Random(7)
    rows = [0.23 * 0.92 ** i + 0.012 for i in range(40)]
    for _ in range(12):  # a spike to 0.2-0.3 every ~25 points, as the real log shows
        rows += [rng.uniform(0.01, 0.02) for _ in range(rng.randrange(15, 35))]
        rows += [rng.uniform(0.2, 0.3) for _ in range(rng.choice((1, 1, 2)))]
    found = severities(run(rows))
    assert "loss.diverging" not in found


def test_a_rise_near_zero_that_stays_up_is_still_a_divergence():
    rng = random.Random(3)
    r = run(near_zero([rng.uniform(0.2, 0.3) for _ in range(120)], after=0))
    a = r.alert("loss.diverging")
    assert a.severity is Severity.CRITICAL and a.first_step == 190 * 100


def test_a_blowup_far_above_the_start_near_zero_is_called_at_once():
    r = run(near_zero([5.0, 40.0, 300.0, 2000.0], after=0))
    a = r.alert("loss.diverging")
    assert a.severity is Severity.CRITICAL and a.first_step == 190 * 100
    assert a.finding.evidence["detected_step"] <= 192 * 100
