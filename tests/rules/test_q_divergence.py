"""rl.q_divergence: a DQN's Q-values growing by orders of magnitude to the end of the run are told; Q-values
that grow from about 0 to the return's scale and level off (a healthy learner) are not."""

from __future__ import annotations

import math
from pathlib import Path

from rulekit import run_log

from tests.adapters.test_tune_result import tune_block
from trainwatch.rules.q_values import is_q_estimate


def _log(tmp_path: Path, name: str, q, gnorm, reward=None) -> Path:  # type: ignore[no-untyped-def]
    path = tmp_path / name
    path.write_text("\n".join(ln for it in range(1, 61) for ln in tune_block(it, q=q(it), gnorm=gnorm(it),
                                                                             reward=reward)) + "\n")
    return path


def test_q_values_growing_without_bound_are_a_warning_and_levelling_off_is_none(tmp_path: Path) -> None:
    diverging = _log(tmp_path, "diverging.out", lambda it: -0.02 + 10 ** (it / 6), lambda it: 0.2 * 10 ** (it / 10),
                     reward=0.0)
    eng = run_log(diverging)
    got = [a for a in eng.alerts(inhibited=False) if a.rule == "rl.q_divergence"]
    assert len(got) == 1
    # the reward that never left 0 is its consequence: it stays quiet (inhibited), the divergence is the story
    assert "quality.not_learning" in {a.rule for a in eng.alerts()}
    assert "quality.not_learning" not in {a.rule for a in eng.alerts(inhibited=False)}
    f = got[0].finding
    assert f.subject == "mean_q" and f.evidence["last_step"] == 60
    assert f.evidence["last_value"] == -0.02 + 10 ** 10  # the value logged at the last step
    a, b, c = f.evidence["first_third"], f.evidence["middle_third"], f.evidence["last_third"]
    assert b >= 5 * a and c >= 5 * b
    healthy = _log(tmp_path, "healthy.out", lambda it: 100 * (1 - math.exp(-it / 8)), lambda it: 0.5)
    assert not [a for a in run_log(healthy).alerts() if a.rule == "rl.q_divergence"]
    assert [is_q_estimate(n) for n in ("mean_q", "player_0/max_q", "Avg Q value", "q_loss", "mean_td_error",
                                       "qps", "seq_len")] == [True, True, True, False, False, False, False]
