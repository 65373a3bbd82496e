"""A range rule whose title says the metric stays out of range (rl.entropy_high: "not converging") is
withdrawn when the metric comes back into range: a falling entropy is never told as one that does not
converge. Other range rules are unchanged: grad-norms back in range only resolve their alert."""

from __future__ import annotations

import json
import math
from pathlib import Path

from tests.rules.rowref.compare import alerts, random_cuts, samples
from tests.rules.rulekit import run_log

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "logs"


def _entropy(rows: list[tuple[int, float]], cuts: list[int] | None) -> list[dict]:
    return json.loads(alerts("rl.entropy_high", None, samples("entropy", rows), cuts, preset="grpo"))


def falling(n: int = 60) -> list[tuple[int, float]]:
    """Entropy from 2.9 down to 0.2, slowly at first, as a GRPO policy sharpens."""
    return [(s, 0.2 + 2.7 / (1 + math.exp((s - 35) / 5))) for s in range(1, n + 1)]


def test_entropy_that_falls_back_into_range_is_withdrawn_whatever_the_batching() -> None:
    rows = falling()
    back = next(s for s, v in rows if v <= 1.0)
    for cuts in (None, [], random_cuts(len(rows), 4)):
        [a] = _entropy(rows, cuts)
        assert a["retracted"].startswith(f"entropy fell to {dict(rows)[back]:.4g} at step {back}, back to 1 or below")


def test_entropy_that_stays_high_stands() -> None:
    rows = [(s, 1.5 + 0.05 * math.sin(s)) for s in range(1, 61)]
    [a] = _entropy(rows, None)
    assert a["retracted"] == "" and a["state"] == "firing"


def test_a_nan_is_not_a_return() -> None:
    rows = [(s, math.nan if s in (25, 26) else 1.5) for s in range(1, 61)]
    [a] = _entropy(rows, None)
    assert a["retracted"] == ""


def test_other_range_rules_only_resolve() -> None:
    rows = [(s, 30.0) for s in range(1, 31)] + [(s, 1.0) for s in range(31, 41)]
    [a] = json.loads(alerts("grad.range", None, samples("grad_norm", rows), None))
    assert a["retracted"] == "" and a["state"] == "resolved"


def test_the_grpo_example_no_longer_calls_a_falling_entropy_too_high() -> None:
    """examples/logs/grpo_tiny.log: entropy 2.883 -> 0.2022, 1.025 at step 42 and 0.8535 at step 44."""
    eng = run_log(EXAMPLES / "grpo_tiny.log", preset="grpo")
    a = next(a for a in eng.alerts() if a.rule == "rl.entropy_high")
    assert a.retracted.startswith("entropy fell to 0.8535 at step 44")
