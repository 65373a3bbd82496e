"""rl.value_divergence: a critic loss a thousandfold above its launch's start, judged per launch."""

from __future__ import annotations

from rulekit import Run

from trainwatch.model import Severity


def test_a_critic_loss_that_jumps_a_thousandfold_is_a_warning_dated_where_it_jumped() -> None:
    r = Run()
    for it in range(8):
        r.step(it, reward=0.05, loss_critic=3800.0 + 50 * (it % 3))
    for it in range(8, 14):
        r.step(it, reward=0.05, loss_critic=1.4e10 + it * 1e8)
    a = r.alert("rl.value_divergence")
    assert a.severity is Severity.WARNING
    assert a.first_step == 8 and a.finding.step == 9  # the median of the last 3 crossed at step 9
    assert "value_loss is 1.49e+10 at step 9" in a.finding.message  # the value logged at that step


def test_a_critic_loss_that_grows_with_the_reward_a_few_times_is_not_diverging() -> None:
    r = Run()
    for it in range(200):
        r.step(it, reward=1.0 + it / 10, value_loss=0.5 * (1 + it / 10) ** 2)  # 400x over the run
    assert "rl.value_divergence" not in r.fired()


def test_each_appended_launch_is_judged_from_its_own_start() -> None:
    r = Run()
    for it in range(50):  # a launch whose critic starts at 1e6 and stays
        r.step(it, vf_loss=1e6)
    for it in range(50):  # the next launch starts small, at 1e3, and climbs back to 1e6: diverging
        r.step(it, vf_loss=1e3 if it < 10 else 1e6)
    a = r.alert("rl.value_divergence")
    assert a.first_step == 10
