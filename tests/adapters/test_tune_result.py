"""Ray Tune's `Result for TRIAL:` blocks (RLlib's result dict as indented YAML) between `== Status ==` tables:
one record per block at its training_iteration, leaves named by their keys, copies told apart by their
policy, lists and bookkeeping left out."""

from __future__ import annotations

from tests.adapters.helpers import run, series
from trainwatch.adapters.keyvalue import KeyValueAdapter
from trainwatch.names import Canonicalizer


def tune_block(it: int, q: float, gnorm: float, trial: str = "DQN_env_1a2b3_00000",
               policies: tuple[str, ...] = ("default_policy",), reward: float | None = None) -> list[str]:
    """A Tune status table, then one result block of a DQN trial at iteration `it`."""
    lines = ["== Status ==", f"Current time: 2023-01-01 10:00:{it % 60:02d} (running for 00:00:{it % 60:02d}.00)",
             "+------------------+----------+--------+", "| Trial name       | status   |   iter |",
             f"| {trial} | RUNNING  | {it:6d} |", "+------------------+----------+--------+", "", "",
             f"Result for {trial}:", f"  agent_timesteps_total: {1000 * it}", "  custom_metrics: {}",
             "  date: 2023-01-01_10-00-00", "  done: false", f"  episode_len_mean: {7.0 + it / 10}",
             f"  episode_reward_mean: {0.1 * it if reward is None else reward}", f"  experiment_id: 0f{it}a",
             "  info:", "    learner:"]
    for k, p in enumerate(policies):
        lines += [f"      {p}:", "        custom_metrics: {}", "        learner_stats:",
                  "          cur_lr: 0.0005", f"          grad_gnorm: {gnorm * (k + 1)}",
                  f"          mean_q: {q * (k + 1)}", f"        mean_td_error: {q / 10}", "        td_error:",
                  "        - -0.72", "        - 0.65"]
    lines += [f"    num_steps_trained: {32 * it}", f"  pid: {4000 + it}", "  policy_reward_mean:"]
    lines += [f"    {p}: {0.5 * (k + 1)}" for k, p in enumerate(policies)]
    lines += [f"  timesteps_total: {1000 * it}", f"  training_iteration: {it}", "  trial_id: '1a2b3_00000'",
              "  "]
    return lines


def test_a_tune_result_block_is_one_record_at_its_training_iteration() -> None:
    lines = [ln for it in (1, 2, 3) for ln in tune_block(it, q=0.5 * it, gnorm=0.1 * it)]
    recs = run(KeyValueAdapter(""), lines)
    assert series(recs, "mean_q") == [(1, 0.5), (2, 1.0), (3, 1.5)]
    assert series(recs, "episode_reward_mean") == [(1, 0.1), (2, 0.2), (3, 0.30000000000000004)]
    assert [s for s, _ in series(recs, "grad_gnorm")] == [1, 2, 3]
    assert Canonicalizer()("grad_gnorm") == "grad_norm"  # RLlib's name for the gradients' global norm
    assert series(recs, "pid") == [] and series(recs, "training_iteration") == []
    assert series(recs, "td_error") == []  # a list of per-sample errors is no series


def test_two_policies_learner_stats_are_told_apart_by_the_policy() -> None:
    lines = [ln for it in (1, 2) for ln in tune_block(it, q=1.0, gnorm=0.2, policies=("player_0", "player_1"))]
    recs = run(KeyValueAdapter(""), lines)
    assert series(recs, "player_0/mean_q") == [(1, 1.0), (2, 1.0)]
    assert series(recs, "player_1/mean_q") == [(1, 2.0), (2, 2.0)]
    assert series(recs, "policy_reward_mean/player_1") == [(1, 1.0), (2, 1.0)]
    assert series(recs, "mean_q") == []
