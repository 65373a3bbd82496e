"""Blow-ups fire at the first jump, within the logging interval; short noisy starts stay quiet; a curve
that diverged is neither flat from the start nor a leak; a restarted run gets its own baseline."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from rulekit import Run, healthy_loss, run_log, told

LOGS = Path(__file__).resolve().parents[2] / "examples" / "logs"


def _first(r: Run, rule: str) -> int | None:
    return r.alert(rule).first_step if rule in r.fired() else None


def _detected(r: Run, rule: str) -> int:
    """The step where the evidence became enough (the alert itself is dated where the condition began)."""
    return r.alert(rule).finding.evidence["detected_step"]


def test_sgd_blowup_every_two_steps_fires_spike_then_divergence_at_once():
    """The shape of hf_high_lr.log: five normal points, then 36, then 6.7e5."""
    r = Run()
    for step, loss, g in [(2, 5.551, 0.66), (4, 5.46, 1.21), (6, 5.758, 1.39), (8, 5.45, 0.72), (9, 5.502, 0.81),
                          (10, 36.38, 94.5), (12, 6.68e5, 6.2e4)]:
        r.step(step, loss=loss, grad_norm=g)
    assert _first(r, "loss.spike") == 10
    assert _first(r, "grad.spike") == 10
    assert _first(r, "loss.diverging") == 10  # the rise began at the jump...
    assert _detected(r, "loss.diverging") == 12  # ...and was certain at the next point


def test_a_jump_after_one_point_is_a_spike_and_the_second_high_point_diverges():
    """The shape of hf_high_lr_adamw.log: 5.55, then about 200 from the next logged step on."""
    r = Run()
    r.step(1, loss=5.551)
    r.step(5, loss=197.8)
    assert _first(r, "loss.spike") == 5
    r.step(10, loss=198.8)
    assert _first(r, "loss.diverging") == 5
    assert _detected(r, "loss.diverging") == 10


@pytest.mark.parametrize("name,spike,began,detected", [("hf_high_lr.log", 10, 10, 12),
                                                        ("torch_high_lr.log", 10, 10, 12),
                                                        ("hf_high_lr_adamw.log", 5, 5, 10)])
def test_example_blowups_fire_at_the_first_jump(name, spike, began, detected):
    p = LOGS / name
    if not p.exists():
        pytest.skip(f"{name} not generated yet")
    eng = run_log(p)
    first = {a.rule: a.first_step for a in eng.alerts()}
    assert first["loss.spike"] == spike and first["loss.diverging"] == began
    div = next(a for a in eng.alerts() if a.rule == "loss.diverging")
    assert div.finding.evidence["detected_step"] == detected
    assert div.finding.evidence["step"] == began and f"step {began}" in div.finding.message


def test_diverged_adamw_run_is_not_flat_and_not_a_leak():
    p = LOGS / "hf_high_lr_adamw.log"
    if not p.exists():
        pytest.skip("hf_high_lr_adamw.log not generated yet")
    t = told(run_log(p))
    assert "loss.flat_from_start" not in t and "loss.leak" not in t
    assert t["loss.diverging"] == 5


def test_flat_curve_that_jumped_at_the_first_step_is_divergence_not_flat():
    r = Run()
    r.step(1, loss=5.5)
    rnd = random.Random(1)
    for s in range(2, 70):
        r.step(s, loss=200 * (1 + rnd.gauss(0, 0.05)))
    r.finish()
    assert "loss.flat_from_start" not in r.fired()
    assert "loss.diverging" in [a.rule for a in r.engine.alerts()]


def test_leak_needs_a_train_loss_that_did_not_blow_up():
    def run(train: list[float]) -> list[str]:
        r = Run()
        for i, v in enumerate(train):
            r.step(i + 1, loss=v)
        r.step(len(train), eval_loss=0.3 * train[-1])
        return r.fired()

    assert "loss.leak" in run([2.0, 1.8, 1.6] + [1.5] * 12)
    assert "loss.leak" not in run([2.0] + [150.0] * 14)  # far below a blown-up train loss: not leakage


def test_leak_ignores_a_train_window_with_nan():
    r = Run()
    for i, v in enumerate([2.0, 1.8, 1.6] + [1.5] * 8 + [float("nan")] + [1.5] * 3):
        r.step(i + 1, loss=v)
    r.step(15, eval_loss=0.4)
    assert "loss.leak" not in r.fired()


@pytest.mark.parametrize("seed", range(40))
def test_noisy_short_starts_stay_quiet(seed):
    """The first points of healthy runs: a noisy, falling loss and a LoRA-style grad-norm that grows
    from near zero over the first steps fire no spike and no divergence."""
    rnd = random.Random(seed)
    r = Run()
    loss = healthy_loss(30, seed, start=rnd.uniform(1.0, 11.0), noise=0.12)
    g = 0.02
    for i, v in enumerate(loss):
        g = min(1.5, g * rnd.uniform(1.5, 3.0)) if i < 6 else abs(1.0 + rnd.gauss(0, 0.3))
        r.step(i + 1, loss=v, grad_norm=g)
    assert not {"loss.spike", "grad.spike", "loss.diverging"} & set(r.fired()), r.fired()


def test_restarted_run_at_another_level_gets_its_own_baseline():
    """Two runs in one log (steps go back): the second run's higher loss is not a divergence."""
    r = Run()
    for i, v in enumerate(healthy_loss(100, 2, start=1.0, end=0.25)):
        r.step(i + 1, loss=v)
    for i, v in enumerate(healthy_loss(60, 3, start=6.0, end=3.0)):
        r.step(i + 1, loss=v)
    r.finish()
    assert "loss.diverging" not in r.fired()
    assert "loss.flat_from_start" not in r.fired()


def test_loss_jump_after_a_resume_late_in_a_long_run():
    """Once the recent window is full, the points after a resume are still counted right."""
    r = Run()
    for s in range(1, 2600):
        r.step(s, loss=1.0 + 0.01 * (s % 3))
    for s in range(2000, 2004):
        r.step(s, loss=2.5)
    assert "resume.loss_jump" in [a.rule for a in r.engine.alerts()]


def test_flat_from_start_still_fires_on_a_long_flat_run():
    r = Run()
    rnd = random.Random(7)
    for s in range(1, 3000):
        r.step(s, loss=2.3 * (1 + rnd.gauss(0, 0.03)))
    a = r.alert("loss.flat_from_start")
    # 3% noise: sure within a few quarters
    assert a.first_step == 1 and 50 <= a.finding.evidence["detected_step"] <= 250
    assert r.fired().count("loss.flat_from_start") == 1  # a noisy flat curve does not flap
    # the two levels are medians and say so: the first one is not the value logged at step 1
    ev = a.finding.evidence
    assert "step 1: the median of its first " in a.finding.message
    assert ev["value_stat"].startswith("median of the first") and ", that of the " in a.finding.message
