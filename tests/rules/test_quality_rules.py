"""Task metrics judged with their direction (data/quality.yaml): a metric stuck near 0, one that collapses
from its best, one whose best evaluation is behind us while the train loss falls; and the loss rules that
step down when the task metric improves (a val loss rising while mIoU improves, a flat soft-target loss
while the accuracy climbs), plus mild, persistent overfitting of the eval loss.

Synthetic series through a real engine, and short logs in shapes the adapters read (JSON lines,
`key value` console lines, a Keras CSVLogger file) written here."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
from rulekit import Run, run_log

from trainwatch import config
from trainwatch.errors import ConfigError
from trainwatch.model import Severity
from trainwatch.names import Quality


def _firing(r: Run) -> dict[str, object]:
    return {a.rule: a for a in (c.alert for c in r.changes if c.state.name == "FIRING")}


def _epochs(r: Run, n: int, per: int, loss, **evals) -> None:  # type: ignore[no-untyped-def]
    """n epochs of `per` train steps each (loss(step)), then each eval metric's value for the epoch."""
    for e in range(n):
        for s in range(e * per + 1, e * per + per + 1):
            r.step(s, loss=loss(s))
        for name, values in evals.items():
            r.sample(name, values[e], e * per + per)


# -- the direction table ---------------------------------------------------------------------------


@pytest.mark.parametrize("name,kind,higher,split", [
    ("test_384_acc1", "accuracy", True, "eval"),
    ("avg. Accuracy@1", "accuracy", True, ""),
    ("metrics/mAP50-95(B)", "map", True, ""),
    ("Validation mIOU", "iou", True, "eval"),
    ("pixAcc", "accuracy", True, ""),
    ("rollout/ep_rew_mean", "reward", True, ""),
    ("pass@1", "pass_at_k", True, ""),
    ("Validity over 64 molecules", "validity", True, ""),
    ("val/box_loss", "loss", False, "eval"),
    ("eval_loss", "loss", False, "eval"),
    ("perplexity", "perplexity", False, ""),
    ("wer", "wer", False, ""),
    ("Val MAE", "error", False, "eval"),
    ("test_rmse", "error", False, "eval"),
    ("train/mean_squared_error", "error", False, "train"),
])
def test_the_name_says_which_way_is_better(name: str, kind: str, higher: bool, split: str) -> None:
    d = Quality()(name)
    assert d is not None and (d.kind, d.higher, d.split) == (kind, higher, split)


@pytest.mark.parametrize("name", ["lr", "grad_norm", "epoch", "reward_std", "frac_reward_zero_std", "kimg",
                                  "tokens_per_sec", "capacity", "valid_prob_perplexity", "train_code_perplexity"])
def test_names_that_say_nothing_about_quality_have_no_direction(name: str) -> None:
    assert Quality()(name) is None


def test_a_user_config_adds_directions(tmp_path: Path) -> None:
    user = tmp_path / "tw.yaml"
    user.write_text("directions: {Sharpness: higher, lpips: lower}\n")
    cfg = config.load("sft", [user])
    q = Quality(cfg.directions)
    assert q("sharpness") is not None and q("sharpness").higher  # type: ignore[union-attr]
    assert q("LPIPS") is not None and not q("LPIPS").higher  # type: ignore[union-attr]
    assert Quality()("lpips") is None
    bad = tmp_path / "bad.yaml"
    bad.write_text("directions: {lpips: sideways}\n")
    with pytest.raises(ConfigError):
        config.load("sft", [bad])


# -- quality.not_learning --------------------------------------------------------------------------


def _stuck_run(evals: int, acc1: list[float], acc5: list[float] | None = None) -> Run:
    r = Run()
    metrics = {"acc1": acc1} if acc5 is None else {"acc1": acc1, "acc5": acc5}
    _epochs(r, evals, 10, lambda s: 3.5 - s * 0.003, **metrics)
    r.finish()
    return r


def test_accuracy_at_chance_in_percent_over_all_evals_is_not_learning() -> None:
    """acc1 0.5-0.8 next to a top-5 of 2-2.6: the source prints percents, so 0.7 is 0.7 %."""
    rnd = random.Random(4)
    acc1 = [rnd.choice([0.48, 0.56, 0.64, 0.7, 0.76]) for _ in range(27)]
    acc5 = [rnd.choice([2.2, 2.5, 2.6]) for _ in range(27)]
    a = _firing(_stuck_run(27, acc1, acc5))["quality.not_learning"]
    assert a.severity is Severity.WARNING  # type: ignore[attr-defined]
    assert a.first_step == 10  # type: ignore[attr-defined]  # dated at the first evaluation
    assert "acc1" in a.finding.message and "0.76%" in a.finding.message  # type: ignore[attr-defined]


def test_the_train_loss_told_beside_a_stuck_metric_is_the_latest_trainings_own() -> None:
    """A pretraining, then a linear evaluation whose steps start again from 0: 'the train loss went X -> Y'
    gives the later training's first loss and steps, not the pretraining's first loss."""
    r = Run()
    for s in range(0, 200, 10):
        r.step(s, loss=10.8 - s * 0.02)
    rnd = random.Random(4)
    for s in range(0, 300, 10):
        r.step(s, loss=6.9 - s * 0.01)
        if s % 20 == 0:
            r.step(s, acc1=rnd.choice([0.48, 0.56, 0.64, 0.7, 0.76]), acc5=rnd.choice([2.2, 2.5, 2.6]))
    r.finish()
    a = _firing(r).get("quality.not_learning")
    assert a is not None and "train loss went 6.9 (step 0) -> 4 (step 290)" in a.finding.message  # type: ignore[attr-defined]


def test_a_fraction_that_could_be_70_percent_is_not_called_stuck() -> None:
    """The same 0.5-0.8 alone cannot tell 0.7 % from 70 %: unsure, so nothing."""
    rnd = random.Random(4)
    acc1 = [rnd.choice([0.48, 0.56, 0.64, 0.7, 0.76]) for _ in range(27)]
    assert "quality.not_learning" not in _firing(_stuck_run(27, acc1))


def test_validity_near_zero_percent_warns_and_a_short_run_only_informs() -> None:
    rnd = random.Random(5)
    vals = [rnd.choice([0.0, 0.0, 1.56, 3.12, 7.81]) for _ in range(19)]
    assert _firing(_stuck_run(19, vals))["quality.not_learning"].severity is Severity.WARNING  # type: ignore[attr-defined]
    assert _firing(_stuck_run(6, vals[:6]))["quality.not_learning"].severity is Severity.INFO  # type: ignore[attr-defined]
    assert "quality.not_learning" not in _firing(_stuck_run(4, vals[:4]))


def test_a_metric_that_never_left_near_zero_is_told_once_as_not_learning_not_as_a_collapse() -> None:
    """Validity 0-7.81 % over 19 evaluations, its 'best' one evaluation of 5 molecules in 64: the model never
    learnt, one incident. quality.collapse must not also call 7.81 % a level it collapsed from (a second,
    contradicting finding): a best below not_learning's near-zero share is no level to collapse from."""
    vals = [1.56, 0.0, 7.81, 0.0, 0.0, 1.56, 0.0, 0.0, 1.56] + [0.0] * 10
    fired = _firing(_stuck_run(19, vals))
    assert "quality.not_learning" in fired and "quality.collapse" not in fired
    near_zero = config.load("sft").rules["quality.not_learning"].params.near_zero
    assert config.load("sft").rules["quality.collapse"].params.min_best >= near_zero


def test_a_low_metric_that_climbs_is_learning_slowly() -> None:
    """DETR's AP after a few epochs: low, but rising."""
    ap = [0.003 + 0.008 * e for e in range(10)]
    assert "quality.not_learning" not in _firing(_stuck_run(10, ap))


# -- quality.collapse ------------------------------------------------------------------------------


def test_accuracy_collapse_that_recovers_is_a_transient_collapse_dated_at_the_fall() -> None:
    r = Run()
    _epochs(r, 6, 100, lambda s: 4.5 - s * 0.0005, val_accuracy=[23.0, 34.7, 2.54, 12.4, 27.1, 35.9])
    r.finish()
    a = _firing(r)["quality.collapse"]
    assert a.first_step == 300 and a.severity is Severity.WARNING  # type: ignore[attr-defined]
    assert a.finding.evidence["best_step"] == 200 and a.finding.evidence["recovered"]  # type: ignore[attr-defined]
    assert "transient" in a.finding.message  # type: ignore[attr-defined]


def test_reward_that_falls_to_zero_for_the_second_half_stayed_down() -> None:
    r = Run()
    rnd = random.Random(3)
    for s in range(1, 1001):
        level = 0.34 * min(s, 300) / 300 if s < 450 else 0.005
        r.step(s * 100, **{"rollout/ep_rew_mean": max(0.0, level + rnd.gauss(0, 0.02))})
    r.finish()
    a = _firing(r)["quality.collapse"]
    assert 44_000 <= a.first_step <= 46_000  # type: ignore[attr-defined]
    assert "stayed down" in a.finding.message  # type: ignore[attr-defined]


def test_a_reward_that_collapsed_to_nothing_and_never_came_back_is_critical() -> None:
    """GRPO's shape: a noisy reward of 0.75-0.975, a two-point dip it recovers from, then 0.375, 0.25, 0.1 and
    0 (a 0.025 now and then) to the end: the run ends earning nothing, critical. A fall to a third of the best
    that holds there, and a dip to 0 that recovers, stay warnings."""
    rnd = random.Random(11)
    high = [rnd.choice([0.75, 0.8, 0.85, 0.9, 0.925, 0.95, 0.975]) for _ in range(26)]
    high[7:9] = [0.075, 0.025]
    fell = [0.375, 0.25, 0.1] + [rnd.choice([0.0, 0.0, 0.0, 0.025]) for _ in range(11)]

    def judged(values: list[float]):  # type: ignore[no-untyped-def]
        r = Run()
        for i, v in enumerate(values):
            r.step(5 * (i + 1), reward=v)
        r.finish()
        return _firing(r)["quality.collapse"]

    a = judged(high + fell)
    assert a.severity is Severity.CRITICAL and a.finding.evidence["to_zero"]  # type: ignore[attr-defined]
    assert "near 0" in a.finding.message  # type: ignore[attr-defined]
    third = judged(high + [0.3 + rnd.uniform(-0.02, 0.02) for _ in range(14)])
    assert third.severity is Severity.WARNING  # type: ignore[attr-defined]
    back = judged(high + fell[:8] + high[:10])
    assert back.severity is Severity.WARNING  # type: ignore[attr-defined]


def test_a_gradual_collapse_names_the_value_where_it_fell_and_the_low_where_it_reached_it() -> None:
    """Each (step, value) pair told is the metric's own there: the fall below half is dated with the value
    at that step, and the lowest point with its own step (not the low beside the fall's step)."""
    r = Run()
    for s in range(1, 301):
        level = 0.3 * min(s, 50) / 50 if s <= 100 else max(0.0, 0.3 - 0.003 * (s - 100))
        r.step(s * 10, **{"rollout/ep_rew_mean": level})
    r.finish()
    a = _firing(r)["quality.collapse"]
    ev = a.finding.evidence  # type: ignore[attr-defined]
    assert ev["step"] == a.first_step and 0.1 < ev["value"] <= 0.15  # type: ignore[attr-defined]
    assert ev["low"] == 0.0 and ev["low_step"] > ev["step"]
    assert f"down to 0 at step {ev['low_step']}" in a.finding.message  # type: ignore[attr-defined]


def test_a_collapse_labels_each_median_with_the_points_it_was_taken_over() -> None:
    """The curve is read through a centred rolling median of 5 points, which shrinks at the ends: the best
    at the first point and the low at the last are medians of 3 points, and the labels say 3, not 5."""
    r = Run()
    vals = [1.0 + 0.1 * (i % 3) for i in range(47)] + [0.3, 0.2, 0.1]  # (noisy: read through its median)
    for i, v in enumerate(vals):
        r.step(10 * (i + 1), reward=v)
    r.finish()
    a = _firing(r)["quality.collapse"]
    ev = a.finding.evidence  # type: ignore[attr-defined]
    assert (ev["best_step"], ev["low_step"], ev["step"]) == (10, 500, 480)
    assert ev["best"] == sorted(vals[:3])[1] and ev["low"] == sorted(vals[-3:])[1]  # medians of those 3
    assert (ev["best_stat"], ev["low_stat"], ev["value_stat"]) == ("median of 3 points", "median of 3 points",
                                                                     "median of 5 points")
    assert "(medians of 3-5 points)" in a.finding.message  # type: ignore[attr-defined]


def test_a_share_near_its_top_that_falls_a_fifth_of_the_scale_and_stays_there_collapsed() -> None:
    """A held-out accuracy of 0.97 that falls to 0.63 and holds there: more than half of the best, but the
    errors grew twelvefold (a classifier now giving one answer to everything). The same fall in percent
    is one too; a mid-range accuracy that wobbles 0.55 -> 0.42 is not (its shortfall grew 1.3x)."""
    def judged(values: list[float]):  # type: ignore[no-untyped-def]
        r = Run()
        for i, v in enumerate(values):
            r.step(20 * i, loss=0.5 - 0.001 * i)
            r.sample("heldout_accuracy", v, 20 * i)
        r.finish()
        return _firing(r).get("quality.collapse")

    fell = [0.97, 0.96, 0.8, 0.7] + [0.63, 0.64, 0.63, 0.62, 0.63] * 3
    a = judged(fell)
    assert a is not None and a.severity is Severity.WARNING  # type: ignore[attr-defined]
    assert not a.finding.evidence["recovered"] and a.first_step <= 100  # type: ignore[attr-defined]
    assert judged([100 * v for v in fell]) is not None
    assert judged([0.55, 0.56, 0.5, 0.46] + [0.42, 0.43, 0.42, 0.41, 0.43] * 3) is None


def test_a_noisy_reward_that_holds_its_level_and_a_chance_level_metric_do_not_collapse() -> None:
    r = Run()
    rnd = random.Random(6)
    for s in range(1, 501):
        r.step(s, reward=0.6 + rnd.gauss(0, 0.15))
    r.finish()
    assert "quality.collapse" not in _firing(r)
    rnd = random.Random(4)
    chance = _stuck_run(27, [rnd.choice([0.0, 0.78]) for _ in range(27)], [rnd.choice([0.78, 2.34]) for _ in range(27)])
    assert "quality.collapse" not in _firing(chance)


# -- quality.overfit -------------------------------------------------------------------------------


def _acc_overfit(train_falls: bool, declines: bool) -> Run:
    r = Run()
    rnd = random.Random(5)
    acc = [(60 + 3 * e if e <= 8 or not declines else 84 - 1.2 * (e - 8)) + rnd.gauss(0, 0.3) for e in range(20)]
    _epochs(r, 20, 10, (lambda s: 3.5 - s * 0.005) if train_falls else (lambda s: 2.5), val_acc=acc)
    r.finish()
    return r


def test_best_val_accuracy_well_behind_while_train_loss_falls_is_overfitting_dated_at_the_best() -> None:
    a = _firing(_acc_overfit(True, True))["quality.overfit"]
    assert a.first_step == 90 and a.severity is Severity.WARNING  # type: ignore[attr-defined]


def test_overfit_labels_its_train_medians_with_the_points_logged() -> None:
    """A train loss logged four times, twice before the best eval: its medians are of 2 and 4 points, and
    the message says so (not the window of 5 it asks for)."""
    r = Run()
    rnd = random.Random(5)
    train = {45: 3.0, 85: 2.8, 150: 2.0, 195: 1.5}
    for e in range(20):
        step = 10 * (e + 1)
        for t in [t for t in train if step - 10 < t <= step]:
            r.step(t, loss=train[t])
        r.step(step, val_acc=(60 + 3 * e if e <= 8 else 84 - 1.2 * (e - 8)) + rnd.gauss(0, 0.3))
    r.finish()
    a = _firing(r)["quality.overfit"]
    ev = a.finding.evidence  # type: ignore[attr-defined]
    assert ev["train_then"] == (3.0 + 2.8) / 2 and ev["train_now"] == (2.8 + 2.0) / 2
    assert "(medians of 2 and 4 points to step 90 and to the end)" in a.finding.message  # type: ignore[attr-defined]


def _erratic_dice(level_after: float) -> Run:
    """A val Dice best at the first epoch, then erratic (two deep dips) around `level_after`, every value
    below the first, while the train loss falls by more than half."""
    r = Run()
    rnd = random.Random(11)
    later = [min(0.68, max(0.02, level_after + rnd.uniform(-0.12, 0.12))) for _ in range(14)]
    later[0], later[8], later[12] = 0.63, 0.09, 0.17  # a slow first fall, then two deep dips
    for e, dice in enumerate([0.69, *later]):
        r.step(e + 1, loss=0.8 * (0.93 ** e), val_dice=dice)
    r.finish()
    return r


def test_an_erratic_eval_metric_best_at_its_first_evaluation_and_lower_since_is_overfitting() -> None:
    """Its latest few are too noisy to tell a fall from a dip; the median of all the evaluations since
    the best, every one of them worse, is not."""
    a = _firing(_erratic_dice(0.5))["quality.overfit"]
    ev = a.finding.evidence  # type: ignore[attr-defined]
    assert a.first_step == 1 and a.severity is Severity.WARNING  # type: ignore[attr-defined]
    assert ev["since_median"] < 0.6 and "their median" in a.finding.message  # type: ignore[attr-defined]
    assert "quality.overfit" not in _firing(_erratic_dice(0.66))  # hardly below the best: noise


def test_no_overfit_when_the_metric_keeps_improving_or_the_train_loss_stands_still() -> None:
    assert "quality.overfit" not in _firing(_acc_overfit(True, False))
    assert "quality.overfit" not in _firing(_acc_overfit(False, True))


# -- loss.overfit: the task metric decides, and mild persistent overfitting ----------------------


def _val_loss_rising(with_miou: bool) -> Run:
    r = Run()
    evals = {"eval_loss": [5.87 + 3.5 * e for e in range(12)]}
    if with_miou:
        evals = {"Validation mIOU": [0.29 + 0.03 * e for e in range(12)], **evals}
    _epochs(r, 12, 10, lambda s: 2.2 - s * 0.01, **evals)
    r.finish()
    return r


def test_val_loss_rising_while_miou_improves_is_calibration_not_overfitting() -> None:
    a = _firing(_val_loss_rising(True))["loss.overfit"]
    assert a.severity is Severity.INFO  # type: ignore[attr-defined]
    msg = a.finding.message.lower()  # type: ignore[attr-defined]
    assert "miou improved" in msg and "calibration" in msg
    assert _firing(_val_loss_rising(False))["loss.overfit"].severity is Severity.WARNING  # type: ignore[attr-defined]


def test_a_rise_told_as_calibration_has_a_calibration_title_and_fixes_not_overfittings() -> None:
    """The info concludes over-confidence: its title says so and its fixes keep the model the task metric
    says is improving (judge by mIoU, calibrate), none tells it to stop earlier; the warning keeps both of
    overfitting."""
    calm = _firing(_val_loss_rising(True))["loss.overfit"]
    assert "calibration" in calm.title.lower() and "overfitting" not in calm.title.lower()  # type: ignore[attr-defined]
    fixes = "\n".join(calm.fixes)  # type: ignore[attr-defined]
    assert "(miou)" in fixes and "label smoothing" in fixes  # the metric the message names
    assert "Stop earlier" not in fixes and "weight decay" not in fixes
    warn = _firing(_val_loss_rising(False))["loss.overfit"]
    assert warn.title.startswith("Overfitting") and warn.fixes[0].startswith("Stop earlier")  # type: ignore[attr-defined]


def _gap(train_acc: list[float]) -> Run:
    """Val accuracy creeping 0.29 -> 0.36 while the val loss climbs; the train accuracy beside it as given."""
    r = Run()
    evals = {"val_accuracy": [0.29 + 0.006 * e for e in range(12)], "accuracy": train_acc,
             "eval_loss": [2.97 + 0.3 * e for e in range(12)]}
    _epochs(r, 12, 10, lambda s: 2.5 - s * 0.02, **evals)
    r.finish()
    return r


def test_val_loss_rising_while_the_train_accuracy_races_ahead_of_the_val_accuracy_is_overfitting() -> None:
    """The val accuracy creeps up, but the train accuracy gains many times more: the gap widens, the
    model memorises the train set; the same val curves beside a train accuracy that keeps pace are the
    over-confidence case."""
    a = _firing(_gap([0.36 + 0.05 * e for e in range(12)]))["loss.overfit"]
    assert a.severity is Severity.WARNING  # type: ignore[attr-defined]
    assert "gap widens" in a.finding.message and a.finding.evidence["gap_train"] == "accuracy"  # type: ignore[attr-defined]
    paced = _firing(_gap([0.36 + 0.008 * e for e in range(12)]))["loss.overfit"]
    assert paced.severity is Severity.INFO  # type: ignore[attr-defined]


def test_an_overfit_told_before_the_evals_noise_is_known_carries_no_nan() -> None:
    """Two evals above the minimum, each above the last: told before there are enough evals to measure their
    noise; the evidence leaves the unknown noise out rather than carry a NaN a reader takes for a value."""
    r = Run()
    _epochs(r, 3, 10, lambda s: 4.9 - s * 0.02, eval_loss=[4.21, 4.34, 4.81])
    a = _firing(r)["loss.overfit"]
    assert "noise" not in a.finding.evidence  # type: ignore[attr-defined]
    assert all(v == v for v in a.finding.evidence.values() if isinstance(v, float))  # type: ignore[attr-defined]


def _mild(evals: list[float]) -> Run:
    r = Run()
    rnd = random.Random(1)
    _epochs(r, len(evals), 10, lambda s: 2.2 - s * 0.01 + rnd.gauss(0, 0.01), eval_loss=evals)
    r.finish()
    return r


def test_eval_loss_one_to_two_percent_above_its_minimum_at_every_last_eval_is_overfitting_onset() -> None:
    descent = [2.0, 1.8, 1.7, 1.65, 1.62, 1.61, 1.60]
    a = _firing(_mild(descent + [1.617, 1.622, 1.628, 1.626]))["loss.overfit"]
    assert a.severity is Severity.WARNING and a.first_step == 70  # type: ignore[attr-defined]
    assert "persistent" in a.finding.message  # type: ignore[attr-defined]
    # noisy evals around the same level, or a rise of under 1%, are not it
    assert "loss.overfit" not in _firing(_mild(descent + [1.62, 1.59, 1.63, 1.605, 1.625, 1.61]))
    assert "loss.overfit" not in _firing(_mild(descent + [1.604, 1.607, 1.608, 1.606]))


# -- loss.flat_from_start / loss.plateau step down when the task metric improves -------------------


def _flat(with_acc: bool) -> Run:
    r = Run()
    rnd = random.Random(2)
    for s in range(1, 81):
        r.step(s, loss=4.77 - 0.0004 * s + rnd.gauss(0, 0.01))
        if with_acc and s % 8 == 0:
            r.step(s, test_acc1=69.5 + 0.4 * (s // 8))
    r.finish()
    return r


def test_a_flat_loss_while_the_accuracy_climbs_is_info() -> None:
    a = _firing(_flat(True))["loss.flat_from_start"]
    assert a.severity is Severity.INFO and "test_acc1 improved" in a.finding.message  # type: ignore[attr-defined]
    assert _firing(_flat(False))["loss.flat_from_start"].severity is Severity.CRITICAL  # type: ignore[attr-defined]


def test_a_loss_plateau_while_the_accuracy_climbs_is_info() -> None:
    def run(with_acc: bool) -> Run:
        r = Run()
        rnd = random.Random(7)
        for s in range(1, 401):
            r.step(s, loss=(6.0 - 1.5 * s / 60 if s <= 60 else 4.5) + rnd.gauss(0, 0.02))
            if with_acc and s % 20 == 0:
                r.step(s, val_accuracy=40 + s / 20)
        r.finish()
        return r
    assert _firing(run(False))["loss.plateau"].severity is Severity.WARNING  # type: ignore[attr-defined]
    a = _firing(run(True))["loss.plateau"]
    assert a.severity is Severity.INFO and "val_accuracy improved" in a.finding.message  # type: ignore[attr-defined]


# -- real shapes -----------------------------------------------------------------------------------


def test_console_lines_with_a_collapsing_accuracy(tmp_path: Path) -> None:
    """`avg. test_loss 3.899 avg. Accuracy@1 23.047 - avg. Accuracy@5 46.417` after each epoch."""
    lines = []
    for e, acc in enumerate([23.0, 34.7, 2.54, 12.4, 27.1, 35.9], 1):
        for i in range(0, 2500, 250):
            lines.append(f"INFO:root:[{e},  {i:4d}/ 2562] - train_losses - Parent Class: {4.9 - 0.05 * e:.3f}")
        lines.append(f"INFO:root:avg. test_loss {3.9 - 0.1 * e:.3f} avg. Accuracy@1 {acc:.3f} - "
                     f"avg. Accuracy@5 {acc * 1.7:.3f}")
    path = tmp_path / "train.out"
    path.write_text("\n".join(lines) + "\n")
    eng = run_log(path)
    got = [a for a in eng.alerts() if a.rule == "quality.collapse"]
    assert len(got) == 1 and "Accuracy@1" in got[0].finding.message and got[0].finding.evidence["recovered"]


def test_keras_csv_whose_val_accuracy_peaked_long_ago(tmp_path: Path) -> None:
    """Keras CSVLogger: epoch,accuracy,learning_rate,loss,val_accuracy,val_loss."""
    rows = ["epoch,accuracy,learning_rate,loss,val_accuracy,val_loss"]
    for e in range(30):
        val_acc = 0.5 + 0.03 * e if e <= 10 else 0.8 - 0.012 * (e - 10)
        rows.append(f"{e},{0.5 + 0.015 * e:.4f},0.001,{2.0 * math.exp(-e / 10) + 0.1:.4f},{val_acc:.4f},"
                    f"{0.7 - 0.01 * min(e, 10):.4f}")
    path = tmp_path / "training_log.csv"
    path.write_text("\n".join(rows) + "\n")
    eng = run_log(path)
    a = next(a for a in eng.alerts() if a.rule == "quality.overfit")
    assert a.first_step in (10, 11) and "val_accuracy" in a.finding.message


def test_jsonl_flat_train_loss_while_test_accuracy_climbs_is_no_failure(tmp_path: Path) -> None:
    rnd = random.Random(2)
    rows = []
    for s in range(1, 81):
        rows.append(json.dumps({"step": s, "train_loss": 4.77 - 0.0004 * s + rnd.gauss(0, 0.01)}))
        if s % 8 == 0:
            rows.append(json.dumps({"step": s, "test_acc1": 69.5 + 0.4 * (s // 8), "test_acc5": 88 + 0.2 * (s // 8)}))
    path = tmp_path / "log.txt.jsonl"
    path.write_text("\n".join(rows) + "\n")
    eng = run_log(path)
    flat = [a for a in eng.alerts() if a.rule in ("loss.flat_from_start", "loss.plateau")]
    assert flat and all(a.severity is Severity.INFO for a in flat)


def test_keras_csv_with_val_loss_a_little_above_its_minimum_for_the_last_epochs(tmp_path: Path) -> None:
    """Mild, persistent: val_loss 1-2% above its minimum at each of the last four epochs, train loss falling."""
    val = [0.9, 0.8, 0.74, 0.71, 0.695, 0.69, 0.688, 0.6985, 0.701, 0.699, 0.7015]
    rows = ["epoch,accuracy,learning_rate,loss,val_accuracy,val_loss"]
    for e, v in enumerate(val):
        rows.append(f"{e},{0.6 + 0.02 * e:.4f},0.001,{1.2 - 0.06 * e:.4f},{0.70 + 0.005 * min(e, 6):.4f},{v}")
    path = tmp_path / "training_log.csv"
    path.write_text("\n".join(rows) + "\n")
    a = next(a for a in run_log(path).alerts() if a.rule == "loss.overfit")
    assert a.severity is Severity.WARNING and a.first_step == 6 and "persistent" in a.finding.message


def test_an_overfit_warning_is_withdrawn_when_the_task_metric_turns_out_to_improve() -> None:
    """mIoU wobbles over the first evals after the eval-loss minimum (no clean climb yet: the warning
    stands), then climbs well beyond its noise: the warning is withdrawn and an info follows."""
    from trainwatch.sinks import report

    r = Run()
    miou = [0.29, 0.27, 0.30, 0.28, 0.36, 0.41, 0.46, 0.50, 0.55, 0.60, 0.64, 0.68]
    evals = {"Validation mIOU": miou, "eval_loss": [5.87 + 3.5 * e for e in range(12)]}
    _epochs(r, 12, 10, lambda s: 2.2 - s * 0.01, **evals)
    r.finish()
    doc = report.document(r.engine, [], "sft", preset_auto=False)
    assert [w["id"] for w in doc["withdrawn"]] == ["loss.overfit"]
    told = [f for f in doc["findings"] if f["id"] == "loss.overfit"]
    assert len(told) == 1 and told[0]["severity"] == "info" and "calibration" in told[0]["message"]


# -- a metric named only a `score`: its direction is a guess ---------------------------------------


def test_a_bare_score_has_a_guessed_direction_and_a_known_metric_does_not() -> None:
    assert Quality()("eval_structure_score_neg").guess  # type: ignore[union-attr]
    assert not Quality()("eval_exact_match_accuracy").guess  # type: ignore[union-attr]
    assert not Quality()("f1_score").guess  # type: ignore[union-attr]


def _score_beside(accuracy: list[float]) -> Run:
    """A `score` that falls to a quarter of its start and another that stays 0, beside an accuracy."""
    r = Run()
    n = len(accuracy)
    falls = [0.012 * (1 - 0.75 * e / (n - 1)) for e in range(n)]
    _epochs(r, n, 10, lambda s: 3.0 - s * 0.004, eval_penalty_score=falls, eval_pos_score=[0.0] * n,
            eval_accuracy=accuracy)
    r.finish()
    return r


def test_a_bare_score_falling_while_the_accuracy_climbs_is_told_as_info_with_that_climb() -> None:
    """Lower may be better for a score the name says nothing of (a penalty): the accuracy beside it rose
    0 -> 0.39, so its fall is no collapse the tool can be sure of, and neither is the other score's 0."""
    fired = _firing(_score_beside([0.39 * e / 19 for e in range(20)]))
    collapse, stuck = fired["quality.collapse"], fired["quality.not_learning"]
    assert collapse.severity is Severity.INFO and stuck.severity is Severity.INFO  # type: ignore[attr-defined]
    assert "eval_accuracy improved" in collapse.finding.message  # type: ignore[attr-defined]
    assert "the model learns" in stuck.finding.message  # type: ignore[attr-defined]
    assert "majority" not in stuck.finding.message  # type: ignore[attr-defined]


def test_a_bare_score_falling_while_nothing_known_improves_is_still_a_warning() -> None:
    fired = _firing(_score_beside([0.2] * 20))
    assert fired["quality.collapse"].severity is Severity.WARNING  # type: ignore[attr-defined]
    assert fired["quality.not_learning"].severity is Severity.WARNING  # type: ignore[attr-defined]


def test_an_eval_metric_best_before_any_training_is_not_overfitting() -> None:
    """An evaluation on start (step 0, before the first train loss) that every later one falls below:
    training never improved the metric, so 'overfitting since its best' (and a train-loss median 'to
    step 0' taken over later points) would be untrue."""
    r = Run()
    r.sample("val_acc", 86.0, 0)
    _epochs(r, 20, 10, lambda s: 3.5 - s * 0.005, val_acc=[85.0 - 0.5 * e for e in range(20)])
    r.finish()
    assert "quality.overfit" not in _firing(r)


def test_a_percent_accuracy_does_not_make_a_fractional_map_a_percent() -> None:
    """MMDetection prints its classifier's accuracy as a percent (97.19) and its bbox mAP as a fraction
    (0.358): read as a percent, a detector that reached 35.8 % mAP would be 'stuck at 0.358 %'."""
    r = Run()
    _epochs(r, 12, 10, lambda s: 1.5 - s * 0.01, acc=[90.0 + e * 0.5 for e in range(12)],
            bbox_mAP=[0.05 + 0.025 * e for e in range(12)])
    r.finish()
    assert "quality.not_learning" not in _firing(r)
