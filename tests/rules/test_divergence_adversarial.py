"""A GAN's generator loss read as `loss` rises when the discriminator gets ahead: with a discriminator's loss
logged beside it, that rise is a warning about the adversarial balance, never a critical divergence."""

from __future__ import annotations

from rulekit import Run

from trainwatch.model import Severity


def rising(**beside: float) -> Run:
    """A loss that sits at 0.7 for 40 points, then climbs to about 3 and stays there."""
    r = Run()
    for i in range(200):
        v = 0.7 + 0.01 * (i % 3) if i < 40 else min(3.0, 0.7 + 0.05 * (i - 40)) + 0.02 * (i % 4)
        r.step(i * 10, loss=v, **beside)
    r.finish()
    return r


def test_a_generator_loss_beside_a_discriminator_loss_is_a_warning() -> None:
    r = rising(**{"Disc Loss": 0.3})
    a = r.alert("loss.diverging")
    assert a.severity is Severity.WARNING
    assert "discriminator" in a.finding.message and a.finding.evidence.get("adversarial") is True


def test_the_same_rise_without_a_discriminator_stays_critical() -> None:
    r = rising(accuracy=0.3)
    assert r.alert("loss.diverging").severity is Severity.CRITICAL
