"""loss.flat_from_start over a whole run: a log whose first point is its first logging interval (step 500
of a loss logged every 500 steps) starts with the run, though its first fall may come before that point (a
warning)."""

from __future__ import annotations

import random

from rulekit import Run

from trainwatch.model import Severity


def run(values: list[float], every: int, **beside: float) -> Run:
    r = Run()
    for i, v in enumerate(values, start=1):
        r.step(i * every, loss=v, **beside)
    r.finish()
    return r


def test_a_flat_loss_first_logged_at_its_logging_interval_is_judged_from_the_start() -> None:
    rng = random.Random(1)
    r = run([1.39 + rng.gauss(0, 0.01) for _ in range(120)], every=500)
    a = r.alert("loss.flat_from_start")
    # judged, though the fall may have come before the first point: a warning that says so
    assert a.severity is Severity.WARNING and a.first_step == 500 and "may have come before it" in a.finding.message


def test_a_log_that_begins_late_is_still_a_resume() -> None:
    rng = random.Random(1)
    r = Run()
    for i in range(120):
        r.step(30000 + 500 * i, loss=1.39 + rng.gauss(0, 0.01))
    r.finish()
    assert "loss.flat_from_start" not in r.fired()


def test_a_gan_generators_flat_loss_is_a_warning_that_says_whose_loss_it_is() -> None:
    """A fine-tuned generator's loss that never falls, with a discriminator's loss beside it: the players
    hold each other level by design, so no critical; the same loss alone stays critical."""
    values = [0.411, 0.4197, 0.418, 0.425, 0.4286, 0.4301, 0.4265, 0.4342, 0.4371, 0.4358, 0.4396, 0.4388, 0.4402]
    alone = run(values, every=1).alert("loss.flat_from_start")
    assert alone.severity is Severity.CRITICAL
    gan = run(values, every=1, d_loss=0.95).alert("loss.flat_from_start")
    assert gan.severity is Severity.WARNING and "GAN generator's" in gan.finding.message
