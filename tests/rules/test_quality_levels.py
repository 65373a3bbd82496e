"""Task metrics judged against the level that means "nothing learnt": an F-measure, precision or recall
exactly 0 at the final evaluation (conlleval's `FB1: 0.00`), a Dice near 0 at every test while the loss
falls, an RL score that never left the level of its first (random-policy) episodes, and the names that
say which way is better for them (FB1, precision, recall, score, FID).

Synthetic series through a real engine, and short console lines in the shapes real logs print."""

from __future__ import annotations

import math
import random
import re
from pathlib import Path

import pytest
from rulekit import Run, run_log

from trainwatch.model import Severity
from trainwatch.names import Quality


def _firing(r: Run) -> dict[str, object]:
    return {a.rule: a for a in (c.alert for c in r.changes if c.state.name == "FIRING")}


# -- names -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name,kind,higher", [
    ("FB1", "f1", True),  # conlleval
    ("f1_score", "f1", True),
    ("precision", "precision", True),
    ("recall", "recall", True),
    ("Average100 Score", "score", True),
    ("eval/return", "reward", True),
    ("mean_dice", "dice", True),
    ("FID", "fid", False),
    ("fid score", "fid", False),  # not a higher-is-better score
    ("bleu score", "bleu", True),
])
def test_names_of_f_measures_scores_and_distances(name: str, kind: str, higher: bool) -> None:
    d = Quality()(name)
    assert d is not None and (d.kind, d.higher) == (kind, higher)


@pytest.mark.parametrize("name", ["rec", "returncode", "Max accuracy so far", "best_dice", "best_test_mAP"])
def test_look_alikes_have_no_direction(name: str) -> None:
    assert Quality()(name) is None


# -- an F-measure exactly 0 at the final evaluation ------------------------------------------------


def _ner(final: bool, f1: float = 0.0) -> Run:
    """Train steps, then one conlleval evaluation (accuracy 69.18 %, precision/recall/FB1 as given);
    with final=False training goes on after it."""
    r = Run()
    for s in range(1, 101):
        r.step(s, loss=2.0 * math.exp(-s / 40) + 0.3)
    for k, v in (("accuracy", 69.18), ("precision", f1), ("recall", f1), ("FB1", f1)):
        r.sample(k, v, 100)
    if not final:
        for s in range(101, 121):
            r.step(s, loss=0.3)
    r.finish()
    return r


def test_precision_recall_and_fb1_exactly_zero_at_the_final_evaluation_is_a_warning() -> None:
    a = _firing(_ner(final=True))["quality.not_learning"]
    assert a.severity is Severity.WARNING  # type: ignore[attr-defined]
    msg = a.finding.message  # type: ignore[attr-defined]
    assert "FB1" in msg and "precision" in msg and "recall" in msg
    assert "accuracy is 69.18%" in msg and "majority" in msg


def test_a_zero_first_evaluation_that_training_goes_past_is_only_info() -> None:
    assert _firing(_ner(final=False))["quality.not_learning"].severity is Severity.INFO  # type: ignore[attr-defined]


def test_a_low_but_nonzero_single_evaluation_says_nothing() -> None:
    assert "quality.not_learning" not in _firing(_ner(final=True, f1=3.2))


def test_a_reward_of_zero_at_one_evaluation_is_no_finding() -> None:
    """A sparse reward is often 0 at first: exact 0 decides only for a share."""
    r = Run()
    for s in range(1, 51):
        r.step(s, loss=1.0 - s * 0.01)
    r.sample("eval_reward", 0.0, 50)
    r.finish()
    assert "quality.not_learning" not in _firing(r)


# -- a Dice near 0 at every test --------------------------------------------------------------------


def test_mean_dice_near_zero_at_all_tests_while_the_loss_falls() -> None:
    """`Testing performance in val model: mean_dice : 0.000455, best_dice : 0.002702` every 10 epochs."""
    dice = [0.0, 0.000004, 0.002702, 0.0, 0.000455, 0.000186, 0.000317, 0.000506, 0.000108, 0.00012]
    r = Run()
    for e in range(10):
        for s in range(e * 1250 + 50, e * 1250 + 1251, 50):
            r.step(s, loss=5.75 * math.exp(-s / 3000) + 1.3)
        r.sample("mean_dice", dice[e], e * 1250 + 1250)
    r.finish()
    a = _firing(r)["quality.not_learning"]
    assert a.severity is Severity.WARNING and "mean_dice" in a.finding.message  # type: ignore[attr-defined]


# -- a score that never left its random-policy level --------------------------------------------------


def _episodes(score, n: int = 500, first: int = 1, name: str = "Average100 Score") -> Run:  # type: ignore[no-untyped-def]
    r = Run()
    for ep in range(first, first + n):
        r.sample(name, score(ep), ep)
    r.finish()
    return r


def _random_policy(seed: int = 3):  # type: ignore[no-untyped-def]
    """A 100-episode running mean of CartPole scores of a policy that learns nothing: about 22."""
    rnd = random.Random(seed)
    eps: list[float] = []

    def score(ep: int) -> float:
        eps.append(max(8.0, rnd.gauss(22, 10)))
        tail = eps[-100:]
        return sum(tail) / len(tail)
    return score


def test_a_running_score_at_the_random_level_for_500_episodes_is_not_learning() -> None:
    a = _firing(_episodes(_random_policy()))["quality.no_progress"]
    assert a.severity is Severity.WARNING and a.first_step == 1  # type: ignore[attr-defined]
    assert "Average100 Score" in a.finding.message and "not learning" in a.finding.message  # type: ignore[attr-defined]


def test_a_flat_scores_peak_near_its_end_is_labelled_with_the_points_its_median_took() -> None:
    """The curve is read through a centred rolling median that shrinks at the ends: a peak made by the last
    few points is a median of fewer points than the window, and its label gives that count."""
    vals = [22.0 + 0.1 * (i % 3) for i in range(192)] + [22.6] * 8  # read through a median of 21 points
    a = _firing(_episodes(lambda ep: vals[ep - 1], n=200))["quality.no_progress"]
    m = re.search(r"never above ([\d.]+) \(a median of (\d+) points\)", a.finding.message)  # type: ignore[attr-defined]
    assert m is not None and float(m.group(1)) == 22.6
    k = int(m.group(2))  # the last k points: the point, the window's half before it and what is left after
    assert k < 21 and sorted(vals[-k:])[k // 2] == 22.6


def test_a_score_that_climbs_or_rose_and_fell_back_is_no_flat_run() -> None:
    rnd = random.Random(1)
    climbs = _episodes(lambda ep: 20 + 0.4 * ep + rnd.gauss(0, 5))
    assert "quality.no_progress" not in _firing(climbs)
    rose = _episodes(lambda ep: 20 + (150 * math.sin(math.pi * ep / 500)) + rnd.gauss(0, 3))
    assert "quality.no_progress" not in _firing(rose)


def test_a_reward_that_rose_in_its_first_episodes_then_held_is_no_flat_run() -> None:
    """A TD3 return: about -150 for its first random episodes, about -60 from episode 25 on, for 600
    episodes. Its first third is already the learnt level; the run learnt early and held on, so 'never rose
    above the level it started at' would be untrue."""
    rnd = random.Random(2)
    vals = [-150 + 90 * min(1.0, ep / 25) + rnd.gauss(0, 12) for ep in range(600)]
    assert "quality.no_progress" not in _firing(_episodes(lambda ep: vals[ep - 1], n=600, name="reward"))


def test_unsure_flat_scores_say_less() -> None:
    """Few points: info. A log that starts late (a resume) or an eval split: its start is no random level."""
    assert _firing(_episodes(_random_policy(), n=12))["quality.no_progress"].severity is Severity.INFO  # type: ignore[attr-defined]
    assert "quality.no_progress" not in _firing(_episodes(_random_policy(), first=400))
    assert "quality.no_progress" not in _firing(_episodes(_random_policy(), name="eval score"))
    assert "quality.no_progress" not in _firing(_episodes(lambda ep: 500.0))  # a capped, constant score


def test_a_return_frozen_after_the_first_update_is_sure_on_few_points() -> None:
    """An exploding first update leaves a deterministic policy: the episode return repeats exactly from
    rollout to rollout. Few points, yet nothing to guess through: a warning that says it is frozen; the
    same few points with noise stay info."""
    frozen = _firing(_episodes(lambda ep: -6050.0 if ep == 1 else -3540.0, n=20, name="reward"))
    a = frozen["quality.no_progress"]
    assert a.severity is Severity.WARNING and a.finding.evidence["frozen"] == 19  # type: ignore[attr-defined]
    assert "frozen" in a.finding.message  # type: ignore[attr-defined]
    rnd = random.Random(4)
    noisy = _firing(_episodes(lambda ep: -6050.0 if ep == 1 else -3540.0 + rnd.gauss(0, 5), n=20, name="reward"))
    assert noisy["quality.no_progress"].severity is Severity.INFO  # type: ignore[attr-defined]


# -- real shapes -----------------------------------------------------------------------------------


def test_overall_validation_lines_of_a_distillation_log_are_read_and_judged(tmp_path: Path) -> None:
    """`Overall validation pixAcc: 2.302, mIoU: 0.232` after `Iters: 800/20000 || ... || Task Loss: ...`
    lines; per-sample `Sample: 246, Validation pixAcc: 0.026, mIoU: 0.002` lines are not evaluations."""
    rnd = random.Random(7)
    lines = []
    for ev in range(12):
        for i in range(ev * 200 + 10, ev * 200 + 201, 10):
            lines.append(f"2023-10-02 23:08:57,029 semantic_segmentation INFO: Iters: {i}/20000 || Lr: 0.019 || "
                         f"Task Loss: {5 + rnd.random():.4f} || KD Loss: {1.6 - 0.05 * ev:.4f}|| Cost Time: 0:00:20")
        for k in range(1, 4):
            lines.append(f"2023-10-02 23:20:23,653 semantic_segmentation INFO: Sample: {k}, Validation pixAcc: "
                         f"0.0{k}6, mIoU: 0.00{k}")
        lines.append(f"2023-10-02 23:20:24,079 semantic_segmentation INFO: Overall validation pixAcc: "
                     f"{2.2 + 0.6 * rnd.random():.3f}, mIoU: {0.23 + 0.1 * rnd.random():.3f}")
    path = tmp_path / "train_log.txt"
    path.write_text("\n".join(lines) + "\n")
    eng = run_log(path)
    assert eng.store.get("Overall validation pixAcc", str(path)) is not None
    a = next(a for a in eng.alerts() if a.rule == "quality.not_learning")
    assert a.severity is Severity.WARNING and "miou" in a.finding.message.lower()


def test_a_sentence_about_accuracy_is_not_a_metric(tmp_path: Path) -> None:
    """DINO's `Accuracy at epoch 0 of the network on the 10000 test images: 0.7%` is prose."""
    lines = []
    for e in range(6):
        lines.append(f"step {e * 10 + 10}: loss {3 - 0.1 * e:.3f}")
        lines.append(f"Accuracy at epoch {e} of the network on the 10000 test images: 0.{e}%")
    path = tmp_path / "train.out"
    path.write_text("\n".join(lines) + "\n")
    eng = run_log(path)
    assert not [s.name for s in eng.store if "ccuracy" in s.name]


def test_a_final_conlleval_line_printed_once_is_an_evaluation(tmp_path: Path) -> None:
    """Train lines, then conlleval's summary once at the end: precision, recall and FB1 all 0."""
    lines = [f"step {s}: loss {2.0 * math.exp(-s / 40) + 0.3:.4f}" for s in range(10, 401, 10)]
    lines.append("processed 2330 tokens with 0 phrases; found: 0 phrases; correct: 0.")
    lines.append("accuracy: 69.18%; precision: 0.00%; recall: 0.00%; FB1: 0.00")
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n")
    eng = run_log(path)
    a = next(a for a in eng.alerts() if a.rule == "quality.not_learning")
    assert a.severity is Severity.WARNING and "FB1" in a.finding.message


def test_a_running_best_is_no_task_metric() -> None:
    """`best_dice` and `Max accuracy so far` never fall: judged, they would hide a collapse."""
    assert Quality()("best_dice") is None and Quality()("mean_dice") is not None


# -- a top-1 accuracy at the chance level of the config's classes ------------------------------------


def _classifier(acc: list[float], classes: int | None, name: str = "val_acc") -> Run:
    from trainwatch import runconfig

    r = Run()
    if classes is not None:  # as the session does with the log's head: `num_classes=10` in an argument dump
        r.engine.source(r.source).facts["run_config"] = runconfig.read(f"Namespace(lr=0.1, num_classes={classes})")
    for e, a in enumerate(acc):
        for s in range(e * 20 + 1, e * 20 + 21):
            r.step(s, loss=2.3 * math.exp(-s / 150) + 0.4)
        r.sample(name, a, e * 20 + 20)
    r.finish()
    return r


def test_a_ten_class_accuracy_at_ten_percent_is_at_chance() -> None:
    rnd = random.Random(2)
    acc = [10 + rnd.uniform(-0.8, 0.9) for _ in range(12)]
    a = _firing(_classifier(acc, 10))["quality.not_learning"]
    assert a.severity is Severity.WARNING  # type: ignore[attr-defined]
    assert "10 classes" in a.finding.message and "chance" in a.finding.message  # type: ignore[attr-defined]
    assert "quality.not_learning" not in _firing(_classifier(acc, None))  # no class count: 10 % is no verdict
    assert "quality.not_learning" not in _firing(_classifier(acc, 10, name="val_acc5"))  # top-5's chance is 5/K
    few = _firing(_classifier(acc[:6], 10))["quality.not_learning"]
    assert few.severity is Severity.INFO  # type: ignore[attr-defined]


def test_an_accuracy_above_the_chance_band_or_climbing_is_learning() -> None:
    assert "quality.not_learning" not in _firing(_classifier([16.0 + e * 0.1 for e in range(12)], 10))
    assert "quality.not_learning" not in _firing(_classifier([0.5 + 0.004 * e for e in range(12)], 2))  # 50 -> 54 %
    assert "quality.not_learning" not in _firing(_classifier([10.0 + 0.4 * e for e in range(12)], 10))


# -- precision and recall trade against each other ---------------------------------------------------


def test_precision_falling_from_its_best_while_recall_rises_is_no_overfitting() -> None:
    """A detector's results.csv: precision best early then lower, recall and mAP still rising."""
    r = Run()
    for e in range(40):
        r.step(e, loss=0.06 * math.exp(-e / 30) + 0.03)
        prec = 0.5 + 0.3 * e / 12 if e <= 12 else 0.8 - 0.1 * (e - 12) / 28
        r.sample("metrics/precision", prec, e)
        r.sample("metrics/recall", 0.3 + 0.4 * e / 40, e)
        r.sample("metrics/mAP_0.5", 0.2 + 0.4 * e / 40, e)
    r.finish()
    assert Quality()("metrics/precision").tradeoff  # type: ignore[union-attr]
    fired = _firing(r)
    assert "quality.overfit" not in fired and "quality.collapse" not in fired


def test_a_flat_eval_reward_beside_a_climbing_training_reward_is_no_flat_run() -> None:
    """SB3: `ep_rew_mean` 130 -> 216 while the eval callback's `episode_reward` is ~216 from its first eval."""
    rnd = random.Random(5)
    r = Run()
    for i in range(1, 150):
        r.sample("reward", 130 + 86 * min(1.0, i / 60) + rnd.gauss(0, 3), i * 2048)
        if i % 5 == 0:
            r.sample("episode_reward", 216 + rnd.gauss(0, 2), i * 2048)
    r.finish()
    assert "quality.no_progress" not in _firing(r)


def test_dice_lines_between_iteration_lines_are_evaluations_from_the_first(tmp_path: Path) -> None:
    """`iteration 1250, epoch 9: loss: 2.33, lr: 0.0008` lines, a `mean_dice: 0.000455, best_dice: 0.002702`
    line after every tenth epoch: all ten tests are read, the first one too."""
    dice = [0.0, 0.000004, 0.002702, 0.0, 0.000455, 0.000186, 0.000317, 0.000506, 0.000108, 0.00012]
    lines = []
    for t in range(10):
        for i in range(t * 1250 + 50, t * 1250 + 1251, 50):
            lines.append(f"iteration {i}, epoch {i // 125}: loss: {5.75 * math.exp(-i / 3000) + 1.3:.6f}, lr: 0.000800")
        lines.append(f"mean_dice: {dice[t]:.6f}, best_dice: {max(dice[:t + 1]):.6f}")
    path = tmp_path / "train.out"
    path.write_text("\n".join(lines) + "\n")
    eng = run_log(path)
    a = next(a for a in eng.alerts() if a.rule == "quality.not_learning")
    assert a.severity is Severity.WARNING and a.finding.evidence["evals"] == 10 and "mean_dice" in a.finding.message


def test_an_actor_critic_return_stuck_below_zero_is_not_learning_under_the_rl_preset() -> None:
    """DDPG's boxed table (`| rollout/return | -811 |`) picks the RL preset; its return jumps from -811 to
    about -500 and stays there: no progress, told by quality.no_progress there too."""
    rnd = random.Random(2)
    r = Run(preset="grpo")
    for ep in range(1, 400):
        r.sample("rollout/return", (-811.0 if ep == 1 else -500.0) + rnd.gauss(0, 15), ep * 2000)
    r.finish()
    a = _firing(r)["quality.no_progress"]
    assert a.severity is Severity.WARNING and "rollout/return" in a.finding.message  # type: ignore[attr-defined]


def test_a_flat_scores_thirds_are_labelled_as_medians_of_its_rolling_medians() -> None:
    """The start and end levels are medians of the thirds of the rolling-median curve, not of the values
    logged: the raw first third's median differs, so the label must say which it is (a label is true)."""
    rnd = random.Random(8)
    vals = [max(0.0, rnd.gauss(0.5, 0.2)) for _ in range(40)]  # a noisy reward that stays at its level
    a = _firing(_episodes(lambda ep: vals[ep - 1], n=40))["quality.no_progress"]
    msg, ev = a.finding.message, a.finding.evidence  # type: ignore[attr-defined]
    m = re.search(r"([-\d.e+]+) in the first third, ([-\d.e+]+) in the last \(each the median of a third's "
                  r"rolling medians of (\d+)(?:-(\d+))? points\)", msg)
    assert m is not None, msg
    raw_first = sorted(vals[:13])[6]
    assert abs(float(m.group(1)) - raw_first) > 1e-3  # not the values' median: the label is needed
    assert "rolling medians of" in ev["value_stat"]
