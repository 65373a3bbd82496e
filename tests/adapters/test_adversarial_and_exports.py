"""A GAN's generator loss as the run's loss, wherever it is printed, and TensorBoard's CSV export whose one
series is named by its file name."""

from __future__ import annotations

from tests.adapters.helpers import run, samples, series
from trainwatch.adapters.csv_metrics import CsvMetricsAdapter, export_name
from trainwatch.adapters.keyvalue import KeyValueAdapter
from trainwatch.adapters.template import TemplateAdapter
from trainwatch.adversarial import generator_as_loss


def test_generator_terms_sum_to_the_loss_only_beside_a_discriminator() -> None:
    assert generator_as_loss([("G_GAN", 2.5), ("G_L1", 50.0), ("D_real", 0.2), ("D_fake", 0.1)])[-1] == ("loss", 52.5)
    assert generator_as_loss([("Loss_D", 0.8), ("Loss_G", 2.1)])[-1] == ("loss", 2.1)
    assert generator_as_loss([("errD", 0.8), ("errG", 2.1)])[-1] == ("loss", 2.1)
    one_side = [("G_GAN", 2.5), ("G_L1", 50.0)]
    assert generator_as_loss(one_side) == one_side  # no discriminator: not known to be a GAN
    plain = [("loss", 1.0), ("loss G", 2.0), ("loss D", 3.0)]
    assert generator_as_loss(plain) == plain  # a plain loss is the loss
    assert generator_as_loss([("g_norm", 1.0), ("d_model", 512.0)]) == [("g_norm", 1.0), ("d_model", 512.0)]


def test_gan_csv_columns_give_the_generator_loss() -> None:
    recs = run(CsvMetricsAdapter("gan.csv"), ["Epoch,Batch,Gen Loss,Disc Loss", "0,0,0.72,1.38", "0,1,0.75,1.36"])
    assert [v for _, v in series(recs, "loss")] == [0.72, 0.75]
    assert [v for _, v in series(recs, "Disc Loss")] == [1.38, 1.36]


def test_pix2pix_console_line_gives_g_gan_plus_g_l1_as_loss() -> None:
    lines = [f"(epoch: 1, iters: {i * 20}, time: 14.4, data: 0.08) G_GAN: 2.436 G_L1: {50 - i}.000 "
             f"D_real: 0.167 D_fake: 0.138 " for i in range(1, 5)]
    recs = run(TemplateAdapter("t"), lines)
    assert series(recs, "loss") == [(20, 51.436), (40, 50.436), (60, 49.436), (80, 48.436)]


def test_spaced_loss_g_loss_d_pairs_give_the_loss() -> None:
    lines = [f"[0 : {i * 100:6d}] loss G : {10.0 / i:.3f} loss D : {-1.0 / i:.3f}" for i in range(1, 5)]
    recs = run(KeyValueAdapter("t"), lines)
    assert [v for _, v in series(recs, "loss")] == [10.0, 5.0, 3.333, 2.5]


def test_tensorboard_export_names_its_value_by_file_and_takes_wall_time_as_time() -> None:
    lines = ["Wall time,Step,Value", "1767240820.5,81920,-5069.3", "1767241067.8,262144,-5181.6"]
    recs = run(CsvMetricsAdapter("/runs/run-PPO_1-tag-rollout_ep_rew_mean.csv"), lines)
    got = samples(recs)
    assert {s.name for s in got} == {"rollout_ep_rew_mean"}
    assert [(s.step, s.value, s.time) for s in got] == [(81920, -5069.3, 1767240820.5), (262144, -5181.6, 1767241067.8)]


def test_export_name_from_the_file_name() -> None:
    assert export_name("/x/reward.csv") == "reward"
    assert export_name("/x/ppo-traffic-reward-100m.csv") == "reward"  # the one metric word among the name's
    assert export_name("/x/run-a-tag-train_loss.csv") == "train_loss"
    assert export_name("/x/export-2024-01.csv") == "value"  # the name does not say
    assert export_name("/x/loss-and-accuracy.csv") == "value"  # nor does a name with two metrics
