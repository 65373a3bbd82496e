"""loss.eval_frozen's flat tier: an eval loss logged alone that moves but barely, from the run's start."""

from __future__ import annotations

from rulekit import Run


def test_an_eval_loss_that_barely_moves_from_the_start_with_no_train_loss_is_flat():
    """Only validation losses, falling 11.884 -> 11.849 over the epochs of a fine-tune (0.3 %): the weights
    change, the model learns nothing measurable. The same evals in a log that starts late (a converged model
    resumed) are no verdict, and an eval loss that falls a few percent is learning."""
    vals = [11.884 - 0.0035 * e * e / 10 for e in range(11)]
    r = Run()
    for e, v in enumerate(vals):
        r.step(e + 1, eval_loss=v)
    r.finish()
    a = r.alert("loss.eval_frozen")
    assert a.finding.evidence["frozen"] is False and "not learning" in a.finding.message
    for start, scale in ((5000, 1.0), (1, 30.0)):
        other = Run()
        for e, v in enumerate(vals):
            other.step(start + e, eval_loss=vals[0] - (vals[0] - v) * scale)
        other.finish()
        assert "loss.eval_frozen" not in other.fired()
