from __future__ import annotations

import math
import random

from rulekit import Run, healthy_loss, warmup_decay_lr

from trainwatch.model import EventKind, Severity


def feed_healthy(r: Run, n: int, seed: int = 0, **kw) -> None:
    rnd = random.Random(seed + 1)
    for i, v in enumerate(healthy_loss(n, seed, **kw)):
        step = i + 1
        r.step(step, loss=v, grad_norm=abs(1.0 + rnd.gauss(0, 0.25)), lr=warmup_decay_lr(i, n))


def test_long_noisy_healthy_curves_fire_nothing():
    for seed in range(5):
        r = Run("sft")
        feed_healthy(r, 600, seed)
        r.event(EventKind.TRAIN_END, step=600)
        r.finish()
        assert r.fired() == [], (seed, r.fired())


def test_nonfinite_after_grad_spike_is_a_blowup_with_sample_range():
    r = Run()
    r.event(EventKind.INFO, batch_size=4, grad_accum=8, world_size=2)
    for s in range(1, 31):
        r.step(s, loss=2.0 - s * 0.01, grad_norm=1.0 + 0.05 * (s % 3))
    r.step(31, grad_norm=40.0, loss=2.4)
    r.step(32, grad_norm=float("inf"))
    r.step(32, loss=float("nan"))
    a = r.alert("loss.nonfinite")
    assert a.severity is Severity.CRITICAL
    assert a.first_step == 32
    assert a.finding.evidence["diagnosis"] == "blow-up"
    assert a.finding.evidence["samples"] == [32 * 64, 32 * 64 + 63]
    assert a.fixes[0].startswith("Optimisation blow-up")
    r.finish()  # the log ends on the Inf grad-norm: no next point to recover at
    assert "grad.nonfinite" in r.fired()


def test_one_inf_grad_norm_that_recovers_is_an_fp16_skip_not_a_blowup():
    r = Run()
    for s in range(1, 31):
        r.step(s, loss=2.0 - s * 0.01, grad_norm=1.0 + 0.05 * (s % 3))
    r.step(31, grad_norm=float("inf"), loss=1.7)
    for s in range(32, 40):
        r.step(s, loss=1.7 - s * 0.001, grad_norm=1.0)
    r.finish()
    assert "grad.nonfinite" not in r.fired()
    twice = Run()
    for s in range(1, 31):
        twice.step(s, loss=2.0 - s * 0.01, grad_norm=1.0)
    twice.step(31, grad_norm=float("nan"))
    twice.step(32, grad_norm=float("nan"))
    assert twice.alert("grad.nonfinite").first_step == 31


def test_nonfinite_with_flat_grad_norm_points_at_the_data():
    r = Run()
    for s in range(1, 31):
        r.step(s, loss=2.0 - s * 0.01, grad_norm=1.0 + 0.05 * (s % 3))
    r.step(31, grad_norm=1.02)
    r.step(31, loss=float("inf"))
    a = r.alert("loss.nonfinite")
    assert a.finding.evidence["diagnosis"] == "bad sample or numerics"
    assert "bad sample" in a.finding.message
    assert "samples" not in a.finding.evidence  # batch facts unknown
    assert a.fixes[0].startswith("Bad sample")


def test_nonfinite_eval_loss_fires_and_dedups_while_it_stays_nan():
    r = Run()
    for s in range(1, 6):
        r.step(s, loss=2.0)
    r.step(5, eval_loss=float("nan"))
    r.step(6, eval_loss=float("nan"))
    assert r.fired().count("loss.nonfinite") == 1
    a = r.alert("loss.nonfinite")
    assert a.count == 2 and a.finding.subject == "eval_loss" and "eval_loss" in a.finding.message


def test_nonfinite_inhibits_spike_while_it_fires():
    r = Run()
    for s in range(1, 31):
        r.step(s, loss=2.0 + 0.01 * (s % 2))
    r.step(31, loss=float("nan"))
    r.step(32, loss=50.0)  # a spike while loss.nonfinite still fires (keep_firing_for)
    assert r.fired() == ["loss.nonfinite"]
    spike = [a for a in r.engine.book.firing() if a.rule == "loss.spike"]
    assert spike and r.engine.book.is_inhibited(spike[0])


def test_loss_spike_fires_once_at_its_step_and_resolves():
    r = Run()
    vals = healthy_loss(60, 3)
    for i, v in enumerate(vals[:40]):
        r.step(i + 1, loss=v)
    r.step(41, loss=vals[40] * 5)
    a = r.alert("loss.spike")
    assert a.first_step == 41 and a.finding.evidence["ratio"] > 4
    for i, v in enumerate(vals[41:], start=42):
        r.step(i, loss=v)
    assert r.fired().count("loss.spike") == 1
    assert a.state.value == "resolved"


def test_small_bump_is_not_a_spike():
    r = Run()
    vals = healthy_loss(60, 4)
    for i, v in enumerate(vals[:40]):
        r.step(i + 1, loss=v)
    r.step(41, loss=vals[40] * 1.5)
    assert "loss.spike" not in r.fired()


def test_diverging_fires_on_a_rising_trend():
    r = Run()
    rnd = random.Random(7)
    for s in range(1, 31):
        r.step(s, loss=3.0 - s * 0.03 + rnd.gauss(0, 0.03))
    for s in range(31, 60):
        r.step(s, loss=(2.1 + (s - 30) * 0.15) * (1 + rnd.gauss(0, 0.02)))
    a = r.alert("loss.diverging")
    assert 30 <= a.first_step <= 34  # dated where the rise began (step 31)...
    assert 35 <= a.finding.evidence["detected_step"] <= 50  # ...found once the median had climbed
    assert a.severity is Severity.CRITICAL


def test_plateau_fires_when_the_loss_stalls_high():
    r = Run()
    rnd = random.Random(2)
    for s in range(1, 100):
        level = 6.0 - 2.0 * min(s, 20) / 20  # falls to 4.0 then sits there
        r.step(s, loss=level * (1 + rnd.gauss(0, 0.01)))
    a = r.alert("loss.plateau")
    assert a.finding.evidence["value"] > 3.9
    assert "loss.flat_from_start" not in r.fired()


def test_plateau_is_silent_below_the_expected_level():
    r = Run()
    for s in range(1, 100):
        r.step(s, loss=1.5 - 0.5 * min(s, 20) / 20)
    assert "loss.plateau" not in r.fired()


def test_flat_from_start_fires_and_also_at_the_end_of_a_short_run():
    r = Run()
    rnd = random.Random(5)
    for s in range(1, 70):
        r.step(s, loss=5.5 + rnd.gauss(0, 0.05))
    a = r.alert("loss.flat_from_start")
    assert a.first_step == 1 and a.severity is Severity.CRITICAL
    assert 50 <= a.finding.evidence["detected_step"] <= 70  # once the noise band of the fall is below 3%
    short = Run()
    for s in range(1, 9):
        short.step(s * 10, loss=5.5 + rnd.gauss(0, 0.05))
    assert "loss.flat_from_start" not in short.fired()
    short.finish()
    assert "loss.flat_from_start" in short.fired()


def test_flat_from_start_on_a_few_points_of_a_run_planned_long_is_a_warning_that_says_why():
    """`running for 150 epochs`, then 70 batches of epoch 1 and no epoch counter: the flat start may be a
    sliver of the run, so a warning; once the log says it is past its first epochs, a critical."""
    rnd = random.Random(5)
    for reached, want in ((None, Severity.WARNING), (20, Severity.CRITICAL)):
        r = Run()
        r.event(EventKind.PLAN, unit="epoch", total=150, since=1, reached=reached)
        for s in range(1, 70):
            r.step(s, loss=0.98 + rnd.gauss(0, 0.005))
        a = r.alert("loss.flat_from_start")
        assert a.severity is want
        assert ("planned for 150 epochs" in a.finding.message) is (want is Severity.WARNING)


def test_flat_from_start_on_a_few_points_the_first_well_into_the_run_is_a_warning_that_says_why():
    """An average logged every tenth round starts after the fall may have happened: unsure, so less."""
    late = Run()
    for s in range(10, 101, 10):
        late.step(s, loss=0.534 - 0.0012 * s / 10)
    late.finish()
    a = late.alert("loss.flat_from_start")
    assert a.severity is Severity.WARNING and "first at step 10" in a.finding.message
    early = Run()  # the same few points, the first at the run's first step: nothing came before it
    for s in [1, *range(10, 91, 10)]:
        early.step(s, loss=0.534 - 0.0012 * s / 10)
    early.finish()
    assert early.alert("loss.flat_from_start").severity is Severity.CRITICAL


def test_a_fast_fall_in_the_first_epochs_then_a_long_rest_is_no_flat_start():
    """6.55 -> 4.3 over five epochs, then 4.2 for hundreds: the loss did fall (a plateau's case), though the
    median of the first quarter already sits on the rest; the same rest from its first point is flat."""
    rnd = random.Random(3)
    start = [6.55, 5.51, 5.18, 4.98, 4.83, 4.72, 4.64]
    for head, fires in ((start, False), ([], True)):
        r = Run()
        rest = [4.25 - 0.0001 * i + rnd.gauss(0, 0.005) for i in range(400)]
        for s, v in enumerate(head + rest):
            r.step(s, loss=v)
        r.finish()
        assert ("loss.flat_from_start" in r.fired()) is fires


def test_flat_from_start_ignores_a_log_that_starts_late():
    r = Run()
    for s in range(1, 70):
        r.step(1000 + s, loss=1.2)
    r.finish()
    assert "loss.flat_from_start" not in r.fired()


def test_a_clear_rise_of_the_eval_loss_with_no_train_loss_logged_is_told_and_says_so():
    """A metrics file of `val_loss` alone: falling to a best at epoch 9, then rising for good."""
    evals = [1.12, 1.02, 0.98, 0.953, 0.945, 0.94, 0.936, 0.9332, 0.935, 0.9328]
    evals += [0.9328 + 0.006 * i + 0.002 * (i % 2) for i in range(1, 30)]
    r = Run()
    for e, ev in enumerate(evals):
        r.step(e * 628 + 627, eval_loss=ev)
    r.finish()
    a = r.alert("loss.overfit")
    assert a.finding.evidence["step"] == 9 * 628 + 627 and "no train loss is logged" in a.finding.message
    assert not any(isinstance(v, float) and v != v for v in a.finding.evidence.values())  # no NaN figures
    flat = Run()  # the same evals resting at their best: nothing
    rnd = random.Random(2)
    for e in range(40):
        flat.step(e * 628 + 627, eval_loss=0.93 + rnd.gauss(0, 0.003))
    flat.finish()
    assert "loss.overfit" not in flat.fired()


def test_an_eval_loss_that_never_moves_with_no_train_loss_logged_is_frozen():
    """`epoch,step,val_loss` with 615.2857 -> 615.2847 over 65 epochs: the weights are not changing. An eval loss
    that moves (a learning run, or a frozen-looking one beside a train loss) is not told."""
    vals = [615.2857, 615.2849, 615.2848] + [615.2847 + 0.00006 * (e % 2) for e in range(62)]
    r = Run()
    for e, v in enumerate(vals):
        r.step(e * 628 + 627, eval_loss=v)
    r.finish()
    assert r.alert("loss.eval_frozen").finding.evidence["points"] == 65
    for extra in ({"moving": True}, {"train": True}):
        other = Run()
        for e, v in enumerate(vals):
            other.step(e * 628 + 627, eval_loss=v * (1 - 0.01 * e) if "moving" in extra else v,
                       **({"loss": 2.0 - 0.01 * e} if "train" in extra else {}))
        other.finish()
        assert "loss.eval_frozen" not in other.fired()


def test_overfit_fires_when_eval_rises_and_train_falls():
    r = Run()
    evals = [2.0, 1.8, 1.7, 1.75, 1.85, 1.95]
    for e, ev in enumerate(evals):
        for s in range(e * 10 + 1, e * 10 + 11):
            r.step(s, loss=2.2 - s * 0.02)
        r.step(e * 10 + 10, eval_loss=ev)
    a = r.alert("loss.overfit")
    assert a.first_step == 30 and a.finding.evidence["step"] == 30  # dated at the eval minimum
    assert a.finding.evidence["detected_step"] == 60  # once the latest evals stand clear of the minimum's level
    assert [s for s, _ in a.finding.evidence["later_evals"]] == [40, 50, 60]


def test_overfit_fires_when_the_train_loss_is_logged_more_rarely_than_the_evals():
    """A trainer_state: an eval every 98 steps, the train loss every 500, so none was logged before the
    eval minimum (step 490); the first train loss after it stands for the train loss there."""
    r = Run()
    evals = [1.51, 1.26, 1.03, 0.87, 0.82, 0.85, 0.87, 0.89, 0.92, 1.03, 1.08, 1.10, 1.12]
    train = {500: 0.94, 1000: 0.30, 1500: 0.05}
    for e, ev in enumerate(evals, 1):
        step = e * 98
        for t in [t for t in train if step - 98 < t <= step]:
            r.step(t, loss=train[t])
        r.step(step, eval_loss=ev)
    r.finish()
    a = r.alert("loss.overfit")
    assert a.severity is Severity.WARNING and a.finding.evidence["step"] == 490
    assert a.finding.evidence["train_then"] == 0.94
    # two train points were logged by the step it was found at (500, 1000): the median says 2, not its window
    assert a.finding.evidence["train_now"] == (0.94 + 0.30) / 2
    assert "median of the last 2)" in a.finding.message and "median of the last 5" not in a.finding.message


def test_overfit_silent_while_train_rises_too():
    r = Run()
    evals = [2.0, 1.8, 1.7, 1.75, 1.85, 1.95]
    for e, ev in enumerate(evals):
        for s in range(e * 10 + 1, e * 10 + 11):
            r.step(s, loss=1.0 + s * 0.02)
        r.step(e * 10 + 10, eval_loss=ev)
    assert "loss.overfit" not in r.fired()


def test_leak_when_eval_far_below_train():
    r = Run()
    for s in range(1, 11):
        r.step(s, loss=2.0)
    r.step(10, eval_loss=0.6)
    assert r.alert("loss.leak").severity is Severity.INFO
    ok = Run()
    for s in range(1, 11):
        ok.step(s, loss=2.0)
    ok.step(10, eval_loss=1.8)
    assert "loss.leak" not in ok.fired()


def test_level_only_in_sft_and_only_at_the_end():
    for preset, expect in (("sft", True), ("pretrain", False)):
        r = Run(preset, fmt="hf_console")
        for s in range(1, 30):
            r.step(s, loss=4.0 + 1.0 / s)
        assert "loss.level" not in r.fired()
        r.finish()
        assert ("loss.level" in r.fired()) is expect
    ok = Run()
    for s in range(1, 30):
        ok.step(s, loss=1.2)
    ok.finish()
    assert "loss.level" not in ok.fired()


def test_megatron_nan_iterations_is_a_range_rule():
    r = Run()
    r.step(10, nan_iterations=0)
    assert r.fired() == []
    r.step(20, **{"number of nan iterations": 2})
    assert r.fired() == ["megatron.nan_iterations"]


def test_nonfinite_values_are_never_dropped_by_trend_rules():
    r = Run()
    for s in range(1, 40):
        r.step(s, loss=float("nan") if s % 5 == 0 else 2.0 - s * 0.01)
    assert r.fired() == ["loss.nonfinite"]  # keep_firing_for holds it across the finite steps between
    assert r.engine.store.get("loss", "run.log").nan_count == 7
    assert not math.isnan(r.engine.store.get("loss", "run.log").minimum)


def test_an_eval_loss_beside_a_train_loss_of_another_name_never_says_no_train_loss_is_logged():
    """`tr_loss` (a train loss the name table does not read as `loss`) beside a rising `val_loss`: the
    eval-only finding says what the log has; a frozen eval loss beside it is no eval_frozen finding."""
    evals = [1.12, 1.02, 0.98, 0.953, 0.945, 0.94, 0.936, 0.9332, 0.935, 0.9328]
    evals += [0.9328 + 0.006 * i + 0.002 * (i % 2) for i in range(1, 30)]
    r = Run()
    for e, ev in enumerate(evals):
        r.step(e * 628 + 627, eval_loss=ev, tr_loss=2.0 - e * 0.01)
    r.finish()
    a = r.alert("loss.overfit")
    assert a is not None and "no train loss is logged" not in a.finding.message and "tr_loss" in a.finding.message
    frozen = Run()
    for e in range(40):
        frozen.step(e * 100 + 100, eval_loss=0.5, tr_loss=2.0 - e * 0.01)
    frozen.finish()
    assert "loss.eval_frozen" not in frozen.fired()


def test_no_plateau_while_the_lr_still_warms_up():
    """A loss that rests while its LR is still climbing is no plateau to fix: "raise the LR" to a schedule
    that is raising it is wrong. The same curve at a steady LR is one."""
    def plateau(lr_at) -> bool:  # type: ignore[no-untyped-def]
        r = Run()
        rnd = random.Random(2)
        for s in range(1, 100):
            level = 6.0 - 2.0 * min(s, 20) / 20  # falls to 4.0 then sits there
            r.step(s, lr=lr_at(s))
            r.step(s, loss=level * (1 + rnd.gauss(0, 0.01)))
        r.finish()
        return "loss.plateau" in r.fired()

    assert plateau(lambda s: 1e-4)
    assert not plateau(lambda s: 1e-4 * s / 1000)  # a long warmup: still rising at the end



def test_overfit_calls_noise_only_the_evals_noise():
    """The band an eval must clear is the larger of its noise and a share of the minimum (2%): on a clean
    climb the share sets it, and the number the message calls its noise is still the evidence's noise."""
    import re

    r = Run()
    for e, ev in enumerate([2.0, 1.8, 1.7, 1.75, 1.85, 1.95]):
        for s in range(e * 10 + 1, e * 10 + 11):
            r.step(s, loss=2.2 - s * 0.01)
        r.step(e * 10 + 10, eval_loss=ev)
    a = r.alert("loss.overfit")
    ev = a.finding.evidence
    assert ev["band"] > ev["noise"]  # the floor set the band here
    said = re.findall(r"its noise (?:\(|is )\+-([-\d.e+]+)", a.finding.message)
    assert said, a.finding.message
    assert all(abs(float(v) - ev["noise"]) <= 1e-3 * ev["noise"] for v in said), a.finding.message
