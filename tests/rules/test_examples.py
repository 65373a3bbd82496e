"""The real logs in examples/logs (tiny real runs): healthy ones stay quiet, induced failures fire the
right rule at the right step."""

from __future__ import annotations

from pathlib import Path

import pytest
from rulekit import run_log, told

LOGS = Path(__file__).resolve().parents[2] / "examples" / "logs"


def _log(name: str) -> Path:
    p = LOGS / name
    if not p.exists():
        pytest.skip(f"{name} not generated yet")
    pytest.importorskip("trainwatch.adapters.hf_console")
    return p


@pytest.mark.parametrize("name", ["hf_healthy.log", "torch_healthy.log"])
def test_healthy_runs_are_quiet(name):
    assert told(run_log(_log(name))) == {}


@pytest.mark.parametrize("name", ["hf_bad_sample.log", "torch_bad_sample.log"])
def test_bad_sample_is_diagnosed_as_data_at_its_step(name):
    eng = run_log(_log(name))
    t = told(eng)
    assert t["loss.nonfinite"] == 40 and t["grad.nonfinite"] == 40
    a = next(a for a in eng.alerts() if a.rule == "loss.nonfinite")
    assert a.finding.evidence["diagnosis"] == "bad sample or numerics"


@pytest.mark.parametrize("name", ["hf_high_lr.log", "torch_high_lr.log", "hf_high_lr_adamw.log"])
def test_high_lr_diverges_early(name):
    t = told(run_log(_log(name)))
    assert t["loss.diverging"] <= 12  # within one logging interval of the first jump
    assert "lr.no_warmup" in t
    assert "loss.flat_from_start" not in t and "loss.leak" not in t  # the curve rose: divergence only


def test_frozen_is_flat_from_start():
    assert "loss.flat_from_start" in told(run_log(_log("hf_frozen.log")))


def test_overfit_fires_at_the_second_rising_eval():
    eng = run_log(_log("hf_overfit.log"))
    t = told(eng)
    assert t["loss.overfit"] == 60  # dated at the eval minimum...
    a = next(a for a in eng.alerts() if a.rule == "loss.overfit")
    assert a.finding.evidence["detected_step"] == 100  # ...found at the second eval above it
    assert set(t) <= {"loss.overfit", "loss.level"}


def test_resume_without_scheduler_state():
    t = told(run_log(_log("hf_resume_no_sched.log")))
    assert 80 < t["resume.sched_reset"] <= 90


def test_the_bad_sample_diagnosis_says_which_grad_norm_it_quotes():
    """The grad norm quoted beside the NaN is the one logged at the step it names (0.9882 at step 30 in
    the bundled log), and the median it is set against says how many points it is the median of."""
    eng = run_log(_log("hf_bad_sample.log"))
    a = next(a for a in eng.alerts() if a.rule == "loss.nonfinite")
    ev = a.finding.evidence
    assert (ev["grad_norm_peak_step"], ev["grad_norm_peak"]) == (30, 0.9882)
    assert ev["grad_norm_baseline_stat"] == "median of 5 points"
    assert "at most 0.9882, at step 30" in a.finding.message
    assert "median 0.7255 of the 5 before those" in a.finding.message
