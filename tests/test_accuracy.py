"""The accuracy scoreboard as tests: every log in benchmarks/accuracy.yaml gives what a correct check says.

The shared corpus of third-party logs lies beside the checkout (../shared/corpus) on developers'
machines and in CI; elsewhere its cases are skipped with the reason printed, and the examples/ cases
still run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .scoreboard import accuracy

ROOT = Path(__file__).resolve().parents[1]

CASES, SKIPPED = accuracy.load_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.label for c in CASES])
def test_log_gives_what_a_correct_check_says(case) -> None:  # type: ignore[no-untyped-def]
    outcome = accuracy.judge(case)
    if outcome.pending:
        assert not outcome.ok, f"holds now: take the pending mark ({outcome.pending}) off its row"
        pytest.xfail(f"pending, {outcome.pending}: {'; '.join(outcome.problems)}")
    assert outcome.ok, "; ".join(outcome.problems)


@pytest.mark.skipif(not SKIPPED, reason="every expected log is present")
def test_skipped_corpus_is_reported() -> None:
    pytest.skip("; ".join(SKIPPED))


def test_matcher_dates_within_one_interval() -> None:
    f = {"id": "loss.diverging", "severity": "critical", "step": 95, "title": "", "message": "", "evidence": {}}
    assert accuracy.matches(f, {"id": "loss.diverging", "step": 90, "within": 5}, with_step=True)
    assert not accuracy.matches(f, {"id": "loss.diverging", "step": 90, "within": 4}, with_step=True)
    assert not accuracy.matches(f, {"severity": "critical", "step": None}, with_step=True)
    assert accuracy.matches(f, {"severity": "warning"}, with_step=False)
