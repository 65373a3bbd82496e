"""A loss that rises while the task metric gets better is no failed objective: an actor-critic's loss (its
value term grows with the returns it regresses) climbs as the reward does. The rise is told as info; the
same rise with a reward that does not improve is still a divergence."""

from __future__ import annotations

import random

from rulekit import Run

from trainwatch.model import Severity


def run(reward: list[float]) -> Run:
    rng = random.Random(3)
    r = Run()
    for i, rew in enumerate(reward):
        loss = 1.0 + 0.4 * i + rng.uniform(-0.2, 0.2)  # the value term tracks the growing returns
        r.step(i * 2048, loss=loss, reward=rew)
    r.finish()
    return r


def test_a_loss_rising_with_the_reward_is_info() -> None:
    r = run([10.0 + 12.0 * i for i in range(60)])
    a = r.alert("loss.diverging")
    assert a.severity is Severity.INFO
    assert a.finding.evidence["improving"] == "reward" and "reward improved" in a.finding.message
    assert r.engine.worst() is None or r.engine.worst() <= Severity.WARNING


def test_a_loss_rising_while_the_reward_stays_flat_is_still_critical() -> None:
    rng = random.Random(4)
    r = run([10.0 + rng.uniform(-1.0, 1.0) for _ in range(60)])
    assert r.alert("loss.diverging").severity is Severity.CRITICAL
