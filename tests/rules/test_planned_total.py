"""run.ended_early against a planned total in its own unit (epochs, steps from a setting, kimg), and
run.early_stopped for a run that said it stopped itself: engine-level with PLAN events, and the whole
command line on small logs in shapes the metric adapters read today."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from rulekit import Run

from trainwatch.model import EventKind

ROOT = Path(__file__).resolve().parents[2]
HOURS = 3 * 3600


def plan(r: Run, unit: str, total: int, since: int, reached: int | None = None, declared: str = "") -> None:
    r.event(EventKind.PLAN, unit=unit, total=total, since=since, reached=reached, declared=declared)


def steps(r: Run, first: int, last: int, every: int = 10) -> None:
    for s in range(first, last + 1, every):
        r.step(s, loss=2.0 - s * 1e-4)


def quiet(r: Run, seconds: float = HOURS) -> None:
    r.clock.t += seconds
    r.changes.extend(r.engine.tick())


def test_a_total_in_epochs_is_compared_with_the_epoch_counter_not_the_step() -> None:
    """Stopped at epoch 7 of 200 after 800 steps: early, said in epochs, dated at the step."""
    r = Run()
    plan(r, "epoch", 200, 1, declared="max_epochs=200")
    steps(r, 10, 800)
    plan(r, "epoch", 200, 1, reached=7, declared="max_epochs=200")
    quiet(r)
    a = r.alert("run.ended_early")
    assert a.finding.step == 800
    assert "ended early at epoch 7 of 200 (step 800)" in a.finding.message
    ev = a.finding.evidence
    assert (ev["unit"], ev["reached"], ev["total"], ev["total_line"]) == ("epoch", 7, 200, 1)
    assert ev["total_text"] == "max_epochs=200"


def test_the_last_epoch_of_a_counter_from_zero_is_the_end() -> None:
    r = Run()
    plan(r, "epoch", 120, 1)
    steps(r, 10, 800)
    plan(r, "epoch", 120, 1, reached=119)
    quiet(r)
    assert "run.ended_early" not in r.fired()


def test_a_total_in_steps_from_a_setting_uses_the_step() -> None:
    r = Run()
    plan(r, "step", 111000, 1, declared="MAX_ITER: 111000")
    steps(r, 20, 41980, every=20)
    quiet(r)
    assert "ended early at step 41980 of 111000" in r.alert("run.ended_early").finding.message


def test_the_adapter_step_total_comes_first() -> None:
    """A step total the adapter read (`N/M` steps, a banner) is the run's own: a plan does not replace it."""
    r = Run()
    r.event(EventKind.INFO, total_steps=300)
    plan(r, "epoch", 200, 2, reached=1)
    steps(r, 10, 300)
    quiet(r)
    assert "run.ended_early" not in r.fired()


def test_a_plan_with_no_counter_gives_way_to_an_older_one_with_a_counter() -> None:
    """Megatron prints `total number of epochs: 8` (its data index) after `train_iters`: only the steps
    can be compared, so the steps decide."""
    r = Run()
    plan(r, "step", 500000, 1)
    plan(r, "epoch", 8, 2)
    steps(r, 10, 5800)
    quiet(r)
    assert "at step 5800 of 500000" in r.alert("run.ended_early").finding.message


def test_a_unit_counted_by_a_series_of_its_own() -> None:
    """`Training for 200000 kimg...` with `kimg 45243.5` read as a metric: compared in kimg."""
    r = Run()
    plan(r, "kimg", 200000, 1)
    for tick in range(1, 30):
        r.step(tick, loss=1.0, kimg=tick * 50.0)
    quiet(r)
    assert "at kimg 1450 of 200000 (step 29)" in r.alert("run.ended_early").finding.message


def test_no_counter_in_the_plan_unit_says_nothing() -> None:
    r = Run()
    plan(r, "epoch", 200, 1)
    steps(r, 10, 800)
    quiet(r)
    assert "run.ended_early" not in r.fired()


def test_an_early_stop_is_an_info_by_design_not_a_warning() -> None:
    r = Run()
    plan(r, "epoch", 25, 1)
    steps(r, 10, 110)
    plan(r, "epoch", 25, 1, reached=11)
    text = "Validation loss has not improved for 3 epochs. Stopping training."
    r.event(EventKind.PLAN, text=text, early_stop=True)
    quiet(r)
    r.finish()
    assert "run.ended_early" not in r.fired()
    a = r.alert("run.early_stopped")
    assert a.severity.label == "info" and a.finding.step == 110
    assert a.finding.message == f"the run stopped early by design at epoch 11 of 25 (step 110): {text}"


def test_an_early_stop_is_not_told_against_a_plan_that_a_later_launch_set() -> None:
    """A run of 100 epochs stopped itself at its 11th; the same file then holds a launch of 1 epoch. The
    stop was not 'at epoch 1 of 1': the later plan says nothing of it, so the step alone is told."""
    r = Run()
    plan(r, "epoch", 100, 1)
    steps(r, 10, 110)
    plan(r, "epoch", 100, 1, reached=11)
    text = "Early stopping triggered after 15 epochs without improvement"
    r.event(EventKind.PLAN, text=text, early_stop=True)
    plan(r, "epoch", 1, r.line + 5, reached=1)
    r.finish()
    a = r.alert("run.early_stopped")
    assert a.finding.message == f"the run stopped early by design at step 110: {text}"


def test_a_kill_with_its_own_finding_gets_no_second_warning() -> None:
    r = Run()
    plan(r, "epoch", 10, 1)
    steps(r, 10, 300)
    plan(r, "epoch", 10, 1, reached=1)
    r.event(EventKind.ERROR, signature="run.signal", text="Received 15 death signal, shutting down workers")
    quiet(r)
    assert "run.signal" in r.fired() and "run.ended_early" not in r.fired()


def test_a_loss_that_never_improved_after_its_first_eval_is_no_early_stopping() -> None:
    """The patience guess: a callback stops a few evaluations after the best, not 27 of them."""
    for evals, expect in (([1.0, 0.9, 1.0, 1.1], False), ([1.0 + 0.1 * k for k in range(28)], True)):
        r = Run()
        r.event(EventKind.INFO, total_steps=1000)
        for k, v in enumerate(evals):
            steps(r, k * 10 + 1, k * 10 + 10, every=1)
            for _ in range(3):  # printed on several lines at one step: one evaluation
                r.step(k * 10 + 10, eval_loss=v)
        quiet(r)
        assert ("run.ended_early" in r.fired()) is expect


# -- the command line --------------------------------------------------------------------------------


def check(path: Path) -> dict:
    proc = subprocess.run([sys.executable, "-m", "trainwatch", "check", "--json", str(path)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode in (0, 1, 2, 3), proc.stderr
    return json.loads(proc.stdout)


def write(path: Path, lines: list[str], age_s: float = HOURS) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    t = time.time() - age_s
    os.utime(path, (t, t))
    return path


def epoch_log(epochs: int, total_line: str) -> list[str]:
    out = [total_line]
    for e in range(epochs):
        out += [f"Epoch [{e}] step: {e * 50 + b * 10} loss: {2 - (e * 50 + b) * 1e-3:.4f} lr: 0.001" for b in range(5)]
    return out


def test_cli_a_run_stopped_at_epoch_7_of_200(tmp_path: Path) -> None:
    doc = check(write(tmp_path / "run.log", epoch_log(8, "Namespace(lr=0.001, batch_size=32, epochs=200)")))
    (src,) = doc["sources"]
    assert src["planned_total"] == {"value": 200, "unit": "epoch", "line": 1, "reached": 7}
    (f,) = [f for f in doc["findings"] if f["id"] == "run.ended_early"]
    assert f["severity"] == "warning" and f["step"] == 390
    assert "ended early at epoch 7 of 200 (step 390)" in f["message"]


def test_cli_a_finished_run_and_a_fresh_file_say_nothing(tmp_path: Path) -> None:
    done = check(write(tmp_path / "done.log", epoch_log(30, "max_epochs: 30")))
    assert done["sources"][0]["planned_total"]["reached"] == 29
    assert "run.ended_early" not in {f["id"] for f in done["findings"]}
    fresh = check(write(tmp_path / "fresh.log", epoch_log(8, "max_epochs: 200"), age_s=5))
    assert "run.ended_early" not in {f["id"] for f in fresh["findings"]}


def test_cli_the_latest_launch_total_applies(tmp_path: Path) -> None:
    lines = ["  MAX_ITER: 1000", *(f"iter: {s}  total_loss: {2 - s * 1e-3:.4f}  lr: 0.01" for s in range(20, 320, 20)),
             "  MAX_ITER: 5000", *(f"iter: {s}  total_loss: {2 - s * 1e-3:.4f}  lr: 0.01" for s in range(320, 620, 20))]
    doc = check(write(tmp_path / "resumed.log", lines))
    assert doc["sources"][0]["planned_total"] == {"value": 5000, "unit": "step", "line": 17, "reached": None}
    (f,) = [f for f in doc["findings"] if f["id"] == "run.ended_early"]
    assert "ended early at step 600 of 5000" in f["message"]


def test_cli_an_early_stopping_callback_is_an_info(tmp_path: Path) -> None:
    lines = [*epoch_log(12, "max_epochs: 100"), "Epoch 00012: early stopping"]
    doc = check(write(tmp_path / "stopped.log", lines))
    assert doc["exit_code"] == 0
    assert "run.ended_early" not in {f["id"] for f in doc["findings"]}
    (f,) = [f for f in doc["findings"] if f["id"] == "run.early_stopped"]
    assert f["severity"] == "info" and f["line"] == len(lines)
    assert f["message"].startswith("the run stopped early by design at epoch 12 of 100")
