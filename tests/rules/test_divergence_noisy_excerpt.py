"""A short excerpt of a converged run's per-batch loss (it starts mid-run, near its floor, and scatters
by factors from batch to batch) is no divergence: the median of three batches a few times the first
batch is that scatter. The blow-up test measures the fast median against a low that was itself a
median over as many points, and asks it to leave the loss's own scatter on a log scale. A real blow-up
in the same noisy loss is still called at once, and a run that jumps at its second point still is."""

from __future__ import annotations

import math
import random

import pytest
from rulekit import Run, loss_run

from trainwatch.model import Severity


def excerpt(seed: int, n: int = 46, floor: float = 0.006, sigma: float = 0.5) -> list[float]:
    """A per-batch loss at its floor: log-normal around `floor`, with now and then a single batch 8-20x
    it. The first batch is one of the low ones (0.4x the floor), as an excerpt may begin on any batch."""
    rng = random.Random(seed)
    rows = [0.4 * floor]
    since = 0
    for _ in range(n - 1):
        since += 1
        if since > 3 and rng.random() < 0.1:
            rows.append(floor * rng.uniform(8.0, 20.0))
            since = 0
        else:
            rows.append(floor * math.exp(rng.gauss(0.0, sigma)))
    return rows


def run(losses: list[float], first_step: int = 3404) -> Run:
    return loss_run(losses, first_step)


def diverging(r: Run) -> list:
    return [a for a in r.engine.alerts() if a.rule == "loss.diverging" and not a.retracted]


@pytest.mark.parametrize("seed", range(10))
def test_an_excerpt_of_a_noisy_converged_loss_is_not_diverging(seed):
    r = run(excerpt(seed))
    assert not [a for a in diverging(r) if a.severity is Severity.CRITICAL]
    assert r.engine.worst() is None or r.engine.worst() <= Severity.WARNING


def test_bumps_of_a_few_batches_over_a_first_low_batch_are_its_scatter():
    """The shape seen: the first batch 0.00245, the next 0.056, then 0.002-0.012, then 0.10 followed by
    0.016, and later 0.024, 0.019, 0.014 in a row: each median of three is 6-8x the first batch."""
    rows = [0.00245, 0.056, 0.0034, 0.0063, 0.0122, 0.0021, 0.0037, 0.0030, 0.0029, 0.0019, 0.1017, 0.0159,
            0.0073, 0.0062, 0.0028, 0.0108, 0.0078, 0.0243, 0.0190, 0.0138, 0.0033, 0.0031, 0.0025, 0.0115,
            0.0324, 0.0018, 0.0054, 0.0100, 0.0218, 0.0106, 0.0073, 0.0083, 0.0057, 0.0071, 0.0277, 0.0029]
    assert not diverging(run(rows))


def test_a_first_low_batch_is_not_the_low_of_a_steady_loss():
    """One low first batch, then a steady loss with a three-point bump: the bump is 5x that batch but
    1.6x the median of the first three points, which is what a median of three compares with."""
    rng = random.Random(5)
    rows = [0.3] + [1.0 + rng.uniform(-0.02, 0.02) for _ in range(20)] + [1.6, 1.62, 1.61]
    rows += [1.0 + rng.uniform(-0.02, 0.02) for _ in range(30)]
    assert not diverging(run(rows))


@pytest.mark.parametrize("seed", range(4))
def test_a_blow_up_of_a_noisy_converged_loss_is_still_called_at_once(seed):
    rows = excerpt(seed) + [5.0, 40.0, 300.0, 2000.0, 9000.0]
    r = Run()
    for i, v in enumerate(rows):
        r.step(3404 + i, loss=v)
        if i == 46 + 2:  # the third point of the blow-up: told by now
            assert [a for a in diverging(r) if a.severity is Severity.CRITICAL and a.last_step == 3404 + i]
    r.finish()
    assert [a for a in diverging(r) if a.severity is Severity.CRITICAL]


def test_a_steady_loss_that_jumps_at_its_second_point_still_diverges():
    r = Run()
    r.step(1, loss=5.551)
    r.step(5, loss=197.8)
    r.step(10, loss=198.8)
    assert r.alert("loss.diverging").severity is Severity.CRITICAL
