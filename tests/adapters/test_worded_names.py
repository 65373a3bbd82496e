"""Metric names written in words home-made loops use: a loss averaged `Ave`, a running figure `so far`, a split
named as a phase, a reward abbreviated; and the shapes of line that carry them."""

from __future__ import annotations

from trainwatch.names import Canonicalizer, averaged, step_loss


def test_a_loss_averaged_and_spelt_short_or_running_so_far_is_the_loss_but_not_the_steps_own() -> None:
    canon = Canonicalizer()
    for name in ("Ave Loss", "ave. loss", "Avg Loss", "Average loss", "avg loss so far", "mean loss until now"):
        assert canon(name) == "loss", name
        assert averaged(name) and not step_loss(name), name
    assert canon("val ave loss") == "eval_loss"
    assert canon("cave loss") != "loss"  # a word that merely ends in the letters is no qualifier


def test_a_split_named_as_a_phase_or_a_set_names_whose_loss_it_is() -> None:
    canon = Canonicalizer()
    assert canon("Training Phase Loss") == "loss" and step_loss("Training Phase Loss")
    assert canon("Validation Phase Loss") == "eval_loss"
    assert canon("dev set loss") == "eval_loss"
    assert canon("phase loss") != "eval_loss"  # no split is named


def test_an_episode_reward_abbreviated_is_the_reward() -> None:
    canon = Canonicalizer()
    assert [canon(n) for n in ("Rew", "rwd", "Ret", "episode_return", "Episode Reward")] == ["reward"] * 5
    assert canon("rewrite") == "rewrite"
