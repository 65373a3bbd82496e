"""A loss printed at one value to its last digit for many points in a row is stuck (a collapse): a warning
that names ln(K) when the level is the cross-entropy of a uniform guess. A noisy loss, a coarse print
(`0.69`), and a loss that sits still for a few points only are not told."""

from __future__ import annotations

import math
import random

from rulekit import healthy_loss
from rulekit import loss_run as run

from trainwatch.model import Severity
from trainwatch.rules.loss_stuck import printed, uniform_classes


def collapsed(k: int, seed: int = 0, frozen: int = 60) -> list[float]:
    """A loss that falls from 4.3 for a few points, then is printed (4 decimals) at ln(k), flickering by
    one unit of the last digit, for `frozen` points; then it escapes and falls on, noisily."""
    rng = random.Random(seed)
    rows = [round(4.3 - 0.08 * i + rng.uniform(-0.02, 0.02), 4) for i in range(6)]
    rows += [round(math.log(k), 4) + rng.choice((0.0, 0.0001)) for _ in range(frozen)]
    rows += [round(math.log(k) - 0.1 - 0.002 * i + rng.uniform(-0.02, 0.02), 4) for i in range(40)]
    return rows


def test_a_loss_frozen_at_its_last_digit_is_stuck_and_ln_k_is_named():
    r = run(collapsed(50))
    a = r.alert("loss.stuck")
    assert a.severity is Severity.WARNING
    ev = a.finding.evidence
    assert ev["points"] >= 60 and ev["uniform_classes"] == 50 and a.first_step == 6
    assert "ln(50)" in a.finding.message


def test_noisy_coarse_and_short_stretches_are_not_stuck():
    assert "loss.stuck" not in run([round(v, 4) for v in healthy_loss(200, 3)]).fired()
    assert "loss.stuck" not in run([0.69] * 80).fired()  # two digits: a coarse print may hide the motion
    assert "loss.stuck" not in run(collapsed(10, frozen=12)).fired()
    rng = random.Random(5)  # a converged loss moving by a few units of its last digit
    assert "loss.stuck" not in run([round(1.2345 + rng.uniform(-0.0005, 0.0005), 4) for _ in range(120)]).fired()


def test_printed_digits_and_uniform_levels():
    assert printed(3.912) == (3, 4) and printed(2.3026) == (4, 5) and printed(100.0) == (0, 1)
    assert uniform_classes(2.3026, 1e-4) == 10 and uniform_classes(2.3126, 1e-4) is None
    assert uniform_classes(9.2103, 1e-4) is None  # ln(10000): its neighbours are too close to tell apart
