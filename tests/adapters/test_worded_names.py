"""Metric names written in words home-made loops use: a loss averaged `Ave`, a running figure `so far`, a split
named as a phase, a reward abbreviated; and the shapes of line that carry them."""

from __future__ import annotations

from tests.adapters.helpers import run, samples, series
from trainwatch.adapters.keyvalue import KeyValueAdapter
from trainwatch.adapters.template import TemplateAdapter
from trainwatch.names import Canonicalizer, Quality, averaged, step_loss


def test_a_loss_averaged_and_spelt_short_or_running_so_far_is_the_loss_but_not_the_steps_own() -> None:
    canon = Canonicalizer()
    for name in ("Ave Loss", "ave. loss", "Avg Loss", "Average loss", "avg loss so far", "mean loss until now"):
        assert canon(name) == "loss", name
        assert averaged(name) and not step_loss(name), name
    assert canon("val ave loss") == "eval_loss"
    assert canon("cave loss") != "loss"  # a word that merely ends in the letters is no qualifier


def test_a_split_named_as_a_phase_names_whose_loss_it_is() -> None:
    canon = Canonicalizer()
    assert canon("Training Phase Loss") == "loss" and step_loss("Training Phase Loss")
    assert canon("Validation Phase Loss") == "eval_loss"
    assert canon("dev stage loss") == "eval_loss"
    assert canon("phase loss") != "eval_loss"  # no split is named


def test_an_episode_reward_abbreviated_is_the_reward() -> None:
    canon = Canonicalizer()
    assert [canon(n) for n in ("Rew", "rwd", "Ret", "episode_return", "Episode Reward")] == ["reward"] * 5
    assert canon("rewrite") == "rewrite"


def test_the_tutorials_ep_r_is_the_episode_reward_and_its_averages_keep_their_names_but_read_as_rewards() -> None:
    """`EP: 12 | ep_r -54` is a reward (higher is better); `avg ep_r` one of its kind; a name that only
    holds the letters (`step_r`, `rep_r`, `ep_rate`) is not."""
    canon, quality = Canonicalizer(), Quality()
    assert [canon(n) for n in ("ep_r", "Ep_r", "ep_rwd", "Episode_Rewards", "ep reward")] == ["reward"] * 5
    for name in ("avg ep_r", "ep_r_mean", "mean_reward", "Average reward", "eval reward"):
        got = quality(canon(name))
        assert got is not None and got.kind == "reward" and got.higher, name
    assert [canon(n) for n in ("step_r", "rep_r", "ep_rate")] == ["step_r", "rep_r", "ep_rate"]
    assert all(quality(n) is None for n in ("step_r", "rep_r", "ep_rate"))


def test_tab_separated_phase_lines_keep_every_metric_field_and_the_epoch_before_them() -> None:
    """A logger prefix, then `Epoch [e]/[E]`, then the metrics in tab-separated fields: the record is every field
    after the prefix (not only the last), its epoch the counter's, and the validation line's accuracy is its own."""
    lines = []
    for e in range(3):
        lines += [f"2020-02-02 08:00:0{e},100 INFO    : Epoch [{e}]/[9] \t Training Phase Loss: {0.5 - e / 10:.3f}"
                  f" \t Accuracy: {0.6 + e / 100:.2f}",
                  f"2020-02-02 08:00:0{e},500 INFO    : Epoch [{e}]/[9] \t Validation Phase Loss: {0.4 - e / 10:.3f}"
                  f" \t Accuracy: {0.7 + e / 100:.2f}"]
    recs = run(KeyValueAdapter(""), lines)
    assert series(recs, "Training Phase Loss") == [(0, 0.5), (1, 0.4), (2, 0.3)]
    assert series(recs, "Validation Phase Loss") == [(0, 0.4), (1, 0.3), (2, 0.2)]
    assert series(recs, "Accuracy") == [(0, 0.6), (1, 0.61), (2, 0.62)]
    assert series(recs, "validation Accuracy") == [(0, 0.7), (1, 0.71), (2, 0.72)]
    # a host and a level before the pairs: both pairs are the record's, not only the one after the last tab
    recs = run(KeyValueAdapter(""), ["node7\tINFO\tloss: 0.5\tacc: 0.9", "node7\tINFO\tloss: 0.4\tacc: 0.95"])
    assert [v for _, v in series(recs, "loss")] == [0.5, 0.4] and len(series(recs, "acc")) == 2


def test_a_pipe_line_titled_by_its_phase_says_whose_metrics_it_holds_and_an_eval_under_way_is_no_result() -> None:
    lines = []
    for e in (1, 2):
        lines += [f"* Train | Epoch {e} | {i}/40 | 2.1 it/s | Loss {1 / e - i / 1000:.3f} | Aux 0.5"
                  for i in (10, 20, 39)]
        lines += [f"* Train Summary | Epoch {e} | Loss={1 / e - 0.039:.3f} | Aux=0.5",
                  f"* Valid | Epoch {e} | 1/2 | 0.5 it/s | Loss 9.0 | Score 1.0",
                  f"* Valid Summary | Epoch {e} | Loss={0.8 / e:.3f} | Score={3.0 * e:.1f}"]
    recs = run(KeyValueAdapter(""), lines)
    canon = Canonicalizer()
    evals = [s for s in samples(recs) if canon(s.name) == "eval_loss"]
    assert [s.value for s in evals] == [0.8, 0.4]  # the summaries only: the batch under way is no result
    assert 9.0 not in [s.value for s in samples(recs)]
    assert [s.value for s in samples(recs, "valid Score")] == [3.0, 6.0]
    trains = [s.value for s in samples(recs) if canon(s.name) == "loss"]
    assert trains[:4] == [0.99, 0.98, 0.961, 0.961] and len(trains) == 8


def test_values_named_only_by_their_split_on_an_epoch_line_are_each_splits_loss() -> None:
    lines = ["Begin fitting.", "Epoch 1: Train=910.5  Val=930.25  MAE=31.5", "Checkpoint written.",
             "Epoch 2: Train=850.0  Val=870.5  MAE=29.0", "Checkpoint written."]
    canon = Canonicalizer()
    for adapter in (KeyValueAdapter(""), TemplateAdapter("")):
        recs = run(adapter, lines)
        named = {canon(s.name): [] for s in samples(recs)}
        for s in samples(recs):
            named[canon(s.name)].append((s.step, s.value))
        assert named["loss"] == [(1, 910.5), (2, 850.0)], type(adapter)
        assert named["eval_loss"] == [(1, 930.25), (2, 870.5)]
        assert named["MAE"] == [(1, 31.5), (2, 29.0)]
    # a test value beside the validation one is a curve of its own; a line that names its loss keeps its names
    recs = run(KeyValueAdapter(""), ["epoch 1: train 0.9 val 0.8 test 0.85", "epoch 2: train 0.7 val 0.6 test 0.65"])
    assert [v for _, v in series(recs, "test_set loss")] == [0.85, 0.65]
    assert [v for _, v in series(recs, "val loss")] == [0.8, 0.6]
    recs = run(KeyValueAdapter(""), ["epoch 1: loss 0.9 train 0.95 val 0.91", "epoch 2: loss 0.8 train 0.96 val 0.92"])
    assert [v for _, v in series(recs, "train")] == [0.95, 0.96] and not series(recs, "train loss")
    recs = run(KeyValueAdapter(""), ["epoch 1: train 0.95", "epoch 2: train 0.96"])  # a split alone: unsaid
    assert not series(recs, "train loss")


def test_a_step_that_goes_back_as_the_epoch_moves_on_counts_within_the_epoch() -> None:
    """`Epoch 1, Step 10` after `Epoch 0, Step 30`: the training step keeps going up (the steps of the epochs before
    are added), and `Starting epoch N current lr is X` dates the rate at the step training reached."""
    lines = []
    for e in range(3):
        lines.append(f"Starting epoch {e} current lr is {0.01 / 2 ** e:g}")
        lines += [f"Epoch {e}, Step {i}, total used time {e * 9 + i / 10:.1f} (s), "
                  f"avg loss so far is {1 - e / 10 - i / 100:.2f}" for i in (10, 20, 30)]
        lines.append(f"Epoch {e}, val loss is {0.9 - e / 10:.2f}, val mse is 0.5.")
    recs = run(KeyValueAdapter(""), lines)
    canon = Canonicalizer()
    losses = [(s.step, s.value) for s in samples(recs) if canon(s.name) == "loss"]
    assert [st for st, _ in losses] == [10, 20, 30, 40, 50, 60, 70, 80, 90]
    assert losses[3] == (40, 0.8)
    assert [(s.step, s.value) for s in samples(recs) if canon(s.name) == "eval_loss"] == [(30, 0.9), (60, 0.8),
                                                                                         (90, 0.7)]
    assert [(s.step, s.value) for s in samples(recs) if canon(s.name) == "lr"] == [(0, 0.01), (30, 0.005),
                                                                                  (60, 0.0025)]
    # a step that keeps going up across epochs stays as printed
    recs = run(KeyValueAdapter(""), ["Epoch 0, Step 10, loss 1.0", "Epoch 0, Step 20, loss 0.9",
                                     "Epoch 1, Step 30, loss 0.8"])
    assert [st for st, _ in series(recs, "loss")] == [10, 20, 30]
