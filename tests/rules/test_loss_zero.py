"""loss.zero: a supervised train loss that falls to exactly 0 from a real level and stays there is told as a
warning; one that crawled to 0 through the printed digits, an RL loss, an eval loss, and a zero stretch the
loss came back from are not."""

from __future__ import annotations

from tests.rules.rulekit import Run, loss_run
from trainwatch.model import Severity

BROKEN = [2.31, 2.05, 1.92, 1.88] + [0.0] * 12


def test_a_loss_that_drops_to_exactly_zero_and_stays_there_is_a_warning() -> None:
    r = loss_run(BROKEN, first_step=10, every=10)
    a = r.alert("loss.zero")
    assert a.severity is Severity.WARNING
    ev = a.finding.evidence
    assert (ev["step"], ev["points"], ev["before"], ev["before_step"]) == (50, 12, 1.88, 40)
    assert "exactly 0 at every one of its last 12 points (steps 50-160)" in a.finding.message


def test_a_loss_that_crawled_to_zero_through_its_printed_digits_is_silent() -> None:
    memorised = [2.0, 1.1, 0.42, 0.09, 0.012, 0.0031, 0.0008, 0.0002] + [0.0] * 10
    assert "loss.zero" not in loss_run(memorised).fired()
    assert "loss.zero" in loss_run(memorised[:4] + [0.0] * 10).fired()  # 0.09 -> 0 at once: no rounding


def test_a_zero_stretch_the_loss_came_back_from_is_silent() -> None:
    assert "loss.zero" not in loss_run([2.0, 1.9] + [0.0] * 8 + [1.7, 1.6]).fired()
    assert "loss.zero" in loss_run([2.0, 1.9] + [0.0] * 8).fired()


def test_rl_presets_and_an_eval_loss_are_not_judged() -> None:
    for preset in ("sft", "pretrain", "vision", "grpo", "ebft"):
        r = Run(preset)
        for i, v in enumerate(BROKEN):
            r.step(i, loss=v)
        r.finish()
        assert ("loss.zero" in r.fired()) is (preset not in ("grpo", "ebft")), preset
    r = Run()
    for i, v in enumerate(BROKEN):
        r.step(i, loss=2.0 - i / 100, eval_loss=v)
    r.finish()
    assert "loss.zero" not in r.fired()


def test_a_loss_zero_from_its_first_point_says_less() -> None:
    a = loss_run([0.0] * 10).alert("loss.zero")
    assert a.severity is Severity.INFO and a.finding.evidence["points"] == 10


def test_a_task_metric_that_improved_over_the_zeros_says_less() -> None:
    r = Run()
    for i, v in enumerate(BROKEN):
        r.step(i, loss=v)
        r.step(i, eval_accuracy=0.30 + 0.04 * i)
    r.finish()
    a = r.alert("loss.zero")
    assert a.severity is Severity.INFO and a.finding.evidence["improving"] == "eval_accuracy"
