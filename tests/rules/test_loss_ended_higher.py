"""A run whose loss jumps at its first updates and settles far above its first value made the model
worse: a warning, dated at the start. A run trained from scratch (the first loss its highest), a noisy
loss around its start, and an excerpt that starts mid-run are not told; a divergence says more."""

from __future__ import annotations

import random

from rulekit import healthy_loss
from rulekit import loss_run as run

from trainwatch.model import Severity


def jumped(seed: int = 0) -> list[float]:
    """A pretrained model's loss 4.8, then 13.6 at the first update, falling back only to about 8."""
    rng = random.Random(seed)
    rows = [4.8, 13.6, 13.9, 12.7, 11.3, 9.6, 18.3, 9.0]
    rows += [9.1 - 0.04 * i + rng.uniform(-0.1, 0.1) for i in range(22)]
    return rows


def test_a_loss_that_jumped_and_never_came_back_to_its_start_is_a_warning():
    r = run(jumped())
    a = r.alert("loss.ended_higher")
    assert a.severity is Severity.WARNING and a.first_step == 0
    assert 1.5 <= a.finding.evidence["ratio"] <= 2.0


def test_healthy_and_noisy_runs_and_late_excerpts_are_not_told():
    assert "loss.ended_higher" not in run(healthy_loss(60, 1)).fired()
    rng = random.Random(4)
    noisy = [1.0] + [1.0 * rng.lognormvariate(0.0, 0.6) for _ in range(40)]
    assert "loss.ended_higher" not in run(noisy).fired()
    assert "loss.ended_higher" not in run(jumped(), first_step=3404).fired()


def test_a_loss_below_zero_that_rose_and_stayed_is_judged_by_its_rise():
    """A trading objective (a negative Sharpe ratio) starts at -0.08 and sits at +0.106 from its third
    epoch on: worse than at the start, though a ratio to a negative start would read it as a fall. One
    that fell further below 0, moved only by its noise, or drifted up toward 0 is not told."""
    rng = random.Random(7)
    rose = [-0.0758, -0.0899] + [0.106 + rng.uniform(-0.0004, 0.0004) for _ in range(60)]
    a = run(rose).alert("loss.ended_higher")
    assert a.severity is Severity.WARNING and a.first_step == 0
    assert 0.17 < a.finding.evidence["rise"] < 0.19 and "ratio" not in a.finding.evidence
    fell = [-0.0758, -0.0899] + [-0.30 + rng.uniform(-0.004, 0.004) for _ in range(60)]
    assert "loss.ended_higher" not in run(fell).fired()
    level = [-0.0358 + rng.uniform(-0.0006, 0.0006) for _ in range(62)]
    assert "loss.ended_higher" not in run(level).fired()
    # a policy-gradient loss, centred on 0 by its normalised advantages, drifting from -0.11 toward 0
    policy = [-0.1081, -0.06] + [rng.uniform(-0.001, 0.002) for _ in range(60)]
    assert "loss.ended_higher" not in run(policy).fired()
